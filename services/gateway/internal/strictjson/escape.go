package strictjson

// firstUnstorableEscape finds the first \u escape in a string of body that
// is valid JSON but denotes text PostgreSQL cannot store, and says what it
// is: \u0000 (text and jsonb hold no NUL character) or half of a UTF-16
// surrogate pair (not a character at all; encoding/json would silently turn
// it into U+FFFD). It returns -1 when there is none. Malformed escapes are
// left to the JSON parser.
func firstUnstorableEscape(body []byte) (int, string) {
	inString := false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			inString = !inString
		case c != '\\' || !inString:
		case i+1 < len(body) && body[i+1] == 'u':
			r, ok := hex4(body, i+2)
			switch {
			case !ok:
				i++ // malformed: the parser reports it
				continue
			case r == 0:
				return i, `\u0000 (a NUL character, which cannot be stored)`
			case r >= 0xDC00 && r <= 0xDFFF:
				return i, "an unpaired UTF-16 surrogate escape"
			case r >= 0xD800 && r <= 0xDBFF:
				low, ok := hex4(body, i+8)
				if !ok || body[i+6] != '\\' || body[i+7] != 'u' || low < 0xDC00 || low > 0xDFFF {
					return i, "an unpaired UTF-16 surrogate escape"
				}
				i += 6 // the low half, checked
			}
			i += 5
		default:
			i++ // an escaped character: \" does not end the string
		}
	}
	return -1, ""
}

// hex4 reads the four hexadecimal digits at body[at:].
func hex4(body []byte, at int) (rune, bool) {
	if at < 0 || at+4 > len(body) {
		return 0, false
	}
	var r rune
	for _, c := range body[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
