package channelconfig_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/channelconfig"
)

func validEmail() channelconfig.Email {
	return channelconfig.Email{
		Host:     "smtp.example.com",
		Port:     587,
		Username: "alerts",
		Password: "secret",
		TLS:      channelconfig.TLSStartTLS,
		From:     "sundial@example.com",
		To:       []string{"ops@example.com"},
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	chat, err := channelconfig.Parse(channelconfig.KindChat, json.RawMessage(`{"url":"https://hooks.slack.com/services/T/B/X"}`))
	require.NoError(t, err)
	require.Equal(t, channelconfig.Chat{URL: "https://hooks.slack.com/services/T/B/X"}, chat)

	hook, err := channelconfig.Parse(channelconfig.KindWebhook, json.RawMessage(`{"url":"https://example.com/alerts?x=1"}`))
	require.NoError(t, err)
	require.Equal(t, channelconfig.Webhook{URL: "https://example.com/alerts?x=1"}, hook)

	raw, err := json.Marshal(validEmail())
	require.NoError(t, err)
	email, err := channelconfig.Parse(channelconfig.KindEmail, raw)
	require.NoError(t, err)
	require.Equal(t, validEmail(), email)

	_, err = channelconfig.Parse(channelconfig.KindChat, json.RawMessage(`{"url": 5}`))
	require.ErrorContains(t, err, "chat config")

	_, err = channelconfig.Parse("pager", json.RawMessage(`{}`))
	var fe *channelconfig.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "type", fe.Field)
}

func TestURLs(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T/B/X": "",
		"https://[2001:db8::1]:8443/x":           "",
		"HTTPS://example.com/x":                  "",
		"":                                       "url: is required",
		"http://example.com/x":                   "url: must use https",
		"ftp://example.com/x":                    "url: must use https",
		"https://user:pw@example.com/x":          "url: must not contain credentials",
		"https://example.com/x#frag":             "url: must not contain a fragment",
		"/relative":                              "url: must be an absolute https URL",
		"https:opaque":                           "url: must be an absolute https URL",
		"https://:443/x":                         "url: must be an absolute https URL",
		"https://exa mple.com/":                  "url: must be an absolute https URL",
		"https://example.com/" + strings.Repeat("a", channelconfig.MaxURLLength): "url: must be at most 2048 characters",
	} {
		for _, validate := range []func() error{
			channelconfig.Chat{URL: raw}.Validate,
			channelconfig.Webhook{URL: raw}.Validate,
		} {
			err := validate()
			if want == "" {
				require.NoError(t, err, raw)
				continue
			}
			require.EqualError(t, err, want, raw)
			var fe *channelconfig.FieldError
			require.ErrorAs(t, err, &fe)
		}
	}
}

func TestEmailValidate(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		change func(*channelconfig.Email)
		// fields are the fields reported, in order; none when valid.
		fields []string
	}{
		"valid":                {func(*channelconfig.Email) {}, nil},
		"implicit tls":         {func(e *channelconfig.Email) { e.TLS = channelconfig.TLSImplicit; e.Port = 465 }, nil},
		"none without creds":   {func(e *channelconfig.Email) { e.TLS, e.Username, e.Password = channelconfig.TLSNone, "", "" }, nil},
		"ipv4 host":            {func(e *channelconfig.Email) { e.Host = "192.0.2.10" }, nil},
		"ipv6 host":            {func(e *channelconfig.Email) { e.Host = "2001:db8::25" }, nil},
		"20 recipients":        {func(e *channelconfig.Email) { e.To = addresses(20) }, nil},
		"no host":              {func(e *channelconfig.Email) { e.Host = "" }, []string{"email.host"}},
		"host with port":       {func(e *channelconfig.Email) { e.Host = "smtp.example.com:25" }, []string{"email.host"}},
		"host with path":       {func(e *channelconfig.Email) { e.Host = "smtp.example.com/x" }, []string{"email.host"}},
		"host with line break": {func(e *channelconfig.Email) { e.Host = "smtp.example.com\r\nRCPT" }, []string{"email.host"}},
		"host with tab":        {func(e *channelconfig.Email) { e.Host = "smtp\t.example.com" }, []string{"email.host"}},
		"host with zone":       {func(e *channelconfig.Email) { e.Host = "fe80::1%eth0" }, []string{"email.host"}},
		"bracketed ipv6":       {func(e *channelconfig.Email) { e.Host = "[2001:db8::25]" }, []string{"email.host"}},
		"long host":            {func(e *channelconfig.Email) { e.Host = strings.Repeat("a", 254) }, []string{"email.host"}},
		"port 0":               {func(e *channelconfig.Email) { e.Port = 0 }, []string{"email.port"}},
		"port 65536":           {func(e *channelconfig.Email) { e.Port = 65536 }, []string{"email.port"}},
		"unknown tls":          {func(e *channelconfig.Email) { e.TLS = "ssl" }, []string{"email.tls"}},
		"none with creds":      {func(e *channelconfig.Email) { e.TLS = channelconfig.TLSNone }, []string{"email.tls"}},
		"username alone":       {func(e *channelconfig.Email) { e.Password = "" }, []string{"email.password"}},
		"password line break":  {func(e *channelconfig.Email) { e.Password = "a\nb" }, []string{"email.password"}},
		"from with name":       {func(e *channelconfig.Email) { e.From = "Sundial <sundial@example.com>" }, []string{"email.from"}},
		"no recipient":         {func(e *channelconfig.Email) { e.To = nil }, []string{"email.to"}},
		"21 recipients":        {func(e *channelconfig.Email) { e.To = addresses(21) }, []string{"email.to"}},
		"bad second recipient": {func(e *channelconfig.Email) { e.To = []string{"a@example.com", "nope"} }, []string{"email.to[1]"}},
		"several problems":     {func(e *channelconfig.Email) { e.Host, e.Port, e.From = "", 0, "" }, []string{"email.host", "email.port", "email.from"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := validEmail()
			tc.change(&e)
			err := e.Validate()
			if tc.fields == nil {
				require.NoError(t, err)
				return
			}
			require.Equal(t, tc.fields, fieldsOf(err))
			require.NotContains(t, err.Error(), "secret", "a password is never echoed")
		})
	}
}

func addresses(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "ops" + strings.Repeat("x", i) + "@example.com"
	}
	return out
}

// fieldsOf lists the fields of the *FieldErrors joined in err.
func fieldsOf(err error) []string {
	var fields []string
	var joined interface{ Unwrap() []error }
	errs := []error{err}
	if errors.As(err, &joined) {
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		var fe *channelconfig.FieldError
		if errors.As(e, &fe) {
			fields = append(fields, fe.Field)
		}
	}
	return fields
}

func TestCheckAddress(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{
		"ops@example.com":                  true,
		"first.last+tag@a.b.test":          true,
		"":                                 false,
		"ops":                              false,
		"<ops@example.com>":                false,
		"Ops <ops@example.com>":            false,
		"ops@example.com\r\nBcc:":          false,
		"ops@exa mple.com":                 false,
		strings.Repeat("a", 250) + "@b.co": false,
	} {
		require.Equal(t, ok, channelconfig.CheckAddress(addr) == nil, addr)
	}
}

func TestRedacted(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T000/B000/XXXX": "https://hooks.slack.com/…",
		"https://chat.example.com/hooks?token=abc":        "https://chat.example.com/…",
		"https://chat.example.com":                        "https://chat.example.com",
		"https://chat.example.com/":                       "https://chat.example.com",
		"https://chat.example.com:8443/x":                 "https://chat.example.com:8443/…",
		"not a url":                                       "…",
		"%zz":                                             "…",
	} {
		require.Equal(t, want, channelconfig.Redacted(raw), raw)
	}
}
