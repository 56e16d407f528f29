package signing

// ValidHeaderPrefix accepts a SUNDIAL_HEADER_PREFIX: an HTTP header name
// token that reads as a name (letters, digits and dashes, starting with a
// letter, at most 64 bytes). Every service that sends signed requests names
// its headers <prefix>-Signature, <prefix>-Id, ..., so they check it alike.
func ValidHeaderPrefix(s string) bool {
	if s == "" || len(s) > 64 || !isLetter(s[0]) || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLetter(s[i]) && !(s[i] >= '0' && s[i] <= '9') && s[i] != '-' {
			return false
		}
	}
	return true
}

func isLetter(b byte) bool {
	return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
}
