package egress

// UserAgent is the User-Agent of every request Sundial sends out, a hook's
// delivery or a notification: Sundial whatever the header prefix, so that
// receivers' logs show who called.
func UserAgent(version string) string {
	return "Sundial/" + version + " (+https://github.com/sundial-run/sundial)"
}
