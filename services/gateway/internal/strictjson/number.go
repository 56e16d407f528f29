package strictjson

import (
	"strconv"
	"strings"
)

// Bounds of PostgreSQL's numeric type, which jsonb stores numbers as: a
// number outside them is valid JSON that no insert accepts, so it is the
// client's to fix (a 400), not a failed insert (a 500).
const (
	maxIntegerDigits  = 131072
	maxFractionDigits = 16383
	// maxExponent keeps the arithmetic below far from overflowing; any
	// exponent beyond it is out of bounds for a non-zero number anyway.
	maxExponent = 1_000_000
)

// numberProblem describes why a JSON number literal cannot be stored, or
// returns "". The fraction digits count as written ("1.50" has two), as
// PostgreSQL keeps them.
func numberProblem(literal string) string {
	const tooLarge = "is a number too large or too precise to store: at most 131072 digits before the decimal point and 16383 after"
	mantissa, exponent := literal, 0
	if i := strings.IndexAny(literal, "eE"); i >= 0 {
		e, err := strconv.Atoi(literal[i+1:])
		if err != nil || e > maxExponent || e < -maxExponent {
			return tooLarge
		}
		mantissa, exponent = literal[:i], e
	}
	intPart, fraction, _ := strings.Cut(strings.TrimPrefix(mantissa, "-"), ".")
	if len(fraction)-exponent > maxFractionDigits {
		return tooLarge
	}
	digits := intPart + fraction
	first := strings.IndexFunc(digits, func(r rune) bool { return r != '0' })
	if first >= 0 && len(intPart)-first+exponent > maxIntegerDigits {
		return tooLarge
	}
	return ""
}
