package hook

import (
	"math"
	"strconv"
)

// storedSize returns how many bytes compacted JSON data takes once
// PostgreSQL has stored it as jsonb and hands it back as text, which is
// what the scheduler reads, publishes in a DueHook (the NATS message whose
// size must stay within max_payload) and the dispatcher sends. jsonb's text
// adds a space after every comma and colon, and writes numbers out in full
// (1e3 is 1000, 1e131071 is 131,072 digits: a few bytes of request become a
// megabyte); it also drops duplicate keys and decodes escapes like \u00e9,
// which only shrink it. So storedSize, which counts the growth and ignores
// the shrinking, is an upper bound of the stored size, exact for data
// without duplicate keys or escapes that decode shorter. data must be
// valid, compacted JSON (json.Compact's output).
func storedSize(data []byte) int {
	size := 0
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString:
			size++
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			size++
			inString = true
		case c == ',' || c == ':':
			size += 2
		case c == '-' || (c >= '0' && c <= '9'):
			end := i + 1
			for end < len(data) && isNumberByte(data[end]) {
				end++
			}
			size = addSat(size, numericSize(string(data[i:end])))
			i = end - 1
		default:
			size++
		}
	}
	return size
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// addSat adds without overflowing.
func addSat(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// numericSize is the length of PostgreSQL's numeric text for a JSON number:
// no exponent, the integer part without leading zeros (at least "0"), and
// as many decimals as the literal's scale (its decimals minus its
// exponent, at least none); a minus sign unless the value is zero.
func numericSize(num string) int {
	neg := num[0] == '-'
	if neg {
		num = num[1:]
	}
	mantissa, exp := num, 0
	for i := 0; i < len(num); i++ {
		if num[i] == 'e' || num[i] == 'E' {
			mantissa = num[:i]
			e, err := strconv.Atoi(num[i+1:])
			if err != nil || e > 1<<30 || e < -(1<<30) {
				// Far beyond what numeric stores: PostgreSQL refuses it,
				// and it is too large here.
				return math.MaxInt / 2
			}
			exp = e
			break
		}
	}
	intPart, frac := mantissa, ""
	for i := 0; i < len(mantissa); i++ {
		if mantissa[i] == '.' {
			intPart, frac = mantissa[:i], mantissa[i+1:]
			break
		}
	}
	digits := intPart + frac
	firstNonZero := len(digits)
	for i := 0; i < len(digits); i++ {
		if digits[i] != '0' {
			firstNonZero = i
			break
		}
	}
	point := len(intPart) + exp // digits before the decimal point
	intLen := 1
	if firstNonZero < point {
		intLen = point - firstNonZero
	}
	size := intLen
	if scale := len(frac) - exp; scale > 0 {
		size += 1 + scale
	}
	if neg && firstNonZero < len(digits) {
		size++
	}
	return size
}
