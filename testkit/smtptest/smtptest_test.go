package smtptest_test

import (
	"crypto/tls"
	"net"
	"net/smtp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/testkit/smtptest"
)

// dial connects a standard library client to srv, speaking TLS from the
// start when the server does.
func dial(t *testing.T, srv *smtptest.Server, implicit bool) *smtp.Client {
	t.Helper()
	var conn net.Conn
	var err error
	if implicit {
		conn, err = tls.Dial("tcp", srv.Addr, &tls.Config{RootCAs: srv.CertPool, ServerName: srv.Host})
	} else {
		conn, err = net.Dial("tcp", srv.Addr)
	}
	require.NoError(t, err)
	c, err := smtp.NewClient(conn, srv.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func send(t *testing.T, c *smtp.Client, from string, to []string, data string) {
	t.Helper()
	require.NoError(t, c.Mail(from))
	for _, rcpt := range to {
		require.NoError(t, c.Rcpt(rcpt))
	}
	w, err := c.Data()
	require.NoError(t, err)
	_, err = w.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, c.Quit())
}

func TestModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{smtptest.TLSNone, smtptest.TLSStartTLS, smtptest.TLSImplicit} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := smtptest.Start(t, smtptest.Options{TLS: mode, Username: "u", Password: "p"})
			c := dial(t, srv, mode == smtptest.TLSImplicit)
			starttls, _ := c.Extension("STARTTLS")
			require.Equal(t, mode == smtptest.TLSStartTLS, starttls)
			if starttls {
				require.NoError(t, c.StartTLS(&tls.Config{RootCAs: srv.CertPool, ServerName: srv.Host}))
			}
			if mode == smtptest.TLSNone {
				// AUTH is never offered in the clear, so mail is refused.
				auth, _ := c.Extension("AUTH")
				require.False(t, auth)
				require.Error(t, c.Mail("a@example.com"))
				require.Empty(t, srv.Messages())
				return
			}
			require.NoError(t, c.Auth(smtp.PlainAuth("", "u", "p", srv.Host)))
			send(t, c, "a@example.com", []string{"b@example.com", "c@example.com"}, "Subject: hi\r\n\r\nbody\r\n")

			got := srv.Wait(t, 1)
			require.Len(t, got, 1)
			require.Equal(t, "a@example.com", got[0].From)
			require.Equal(t, []string{"b@example.com", "c@example.com"}, got[0].To)
			require.Equal(t, "Subject: hi\r\n\r\nbody\r\n", string(got[0].Data))
		})
	}
}

func TestWrongPassword(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{TLS: smtptest.TLSImplicit, Username: "u", Password: "p"})
	c := dial(t, srv, true)
	require.ErrorContains(t, c.Auth(smtp.PlainAuth("", "u", "wrong", srv.Host)), "535")
	require.Error(t, c.Mail("a@example.com"))
}

func TestRejectRecipients(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{RejectRecipients: []string{"gone@example.com"}})
	c := dial(t, srv, false)
	require.NoError(t, c.Mail("a@example.com"))
	require.ErrorContains(t, c.Rcpt("gone@example.com"), "550")
	require.NoError(t, c.Rcpt("b@example.com"))
	w, err := c.Data()
	require.NoError(t, err)
	_, err = w.Write([]byte("\r\nx\r\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, []string{"b@example.com"}, srv.Wait(t, 1)[0].To)
}
