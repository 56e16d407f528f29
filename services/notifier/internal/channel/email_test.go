package channel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/services/notifier/internal/channel"
	"github.com/sundial-run/sundial/services/notifier/internal/message"
	"github.com/sundial-run/sundial/testkit/smtptest"
)

const (
	smtpUser     = "alerts@acme.test"
	smtpPassword = "s3cret-Passw0rd"
)

var recipients = []string{"ops@acme.test", "cto@acme.test"}

func emailConfig(srv *smtptest.Server, policy string, withAuth bool) channelconfig.Email {
	cfg := channelconfig.Email{
		Host: srv.Host,
		Port: srv.Port,
		TLS:  policy,
		From: "sundial@alerts.test",
		To:   recipients,
	}
	if withAuth {
		cfg.Username, cfg.Password = smtpUser, smtpPassword
	}
	return cfg
}

func emailTarget(cfg channelconfig.Email) channel.Target {
	raw, _ := json.Marshal(cfg)
	return channel.Target{Kind: channelconfig.KindEmail, Config: raw}
}

// parsedMail is a received message taken apart.
type parsedMail struct {
	Header mail.Header
	Text   string
	HTML   string
}

// parseMail reads a multipart/alternative message with a quoted-printable
// text/plain and text/html part, failing the test on any other shape.
func parseMail(t *testing.T, data []byte) parsedMail {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	require.NoError(t, err)
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "multipart/alternative", mediaType)
	out := parsedMail{Header: msg.Header}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var types []string
	for {
		part, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		require.Equal(t, "quoted-printable", part.Header.Get("Content-Transfer-Encoding"))
		body, err := io.ReadAll(quotedprintable.NewReader(part))
		require.NoError(t, err)
		partType, partParams, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
		require.NoError(t, err)
		// Charset names are case-insensitive (RFC 2046).
		require.Equal(t, "utf-8", strings.ToLower(partParams["charset"]))
		types = append(types, partType)
		switch partType {
		case "text/plain":
			out.Text = string(body)
		case "text/html":
			out.HTML = string(body)
		}
	}
	require.Equal(t, []string{"text/plain", "text/html"}, types)
	return out
}

func TestEmailPolicies(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		policy string
		auth   bool
	}{
		"starttls with auth":     {channelconfig.TLSStartTLS, true},
		"starttls without auth":  {channelconfig.TLSStartTLS, false},
		"implicit tls with auth": {channelconfig.TLSImplicit, true},
		"plain none":             {channelconfig.TLSNone, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := smtptest.Options{TLS: tc.policy}
			if tc.auth {
				opts.Username, opts.Password = smtpUser, smtpPassword
			}
			srv := smtptest.Start(t, opts)
			b := setup(t, setupOptions{roots: srv.CertPool})

			require.NoError(t, b.sender.Send(context.Background(), emailTarget(emailConfig(srv, tc.policy, tc.auth)), b.msg))

			got := srv.Wait(t, 1)
			require.Len(t, got, 1)
			require.Equal(t, "sundial@alerts.test", got[0].From)
			require.Equal(t, recipients, got[0].To)
			m := parseMail(t, got[0].Data)
			from, err := mail.ParseAddress(m.Header.Get("From"))
			require.NoError(t, err)
			require.Equal(t, "sundial@alerts.test", from.Address)
			to, err := m.Header.AddressList("To")
			require.NoError(t, err)
			require.Len(t, to, 2)
			require.Equal(t, recipients[0], to[0].Address)
			require.Equal(t, recipients[1], to[1].Address)
			require.Equal(t, "[Sundial] acme: 1 hook failed on api.acme.com/webhooks/x", m.Header.Get("Subject"))
			require.Equal(t, "<"+b.msg.GroupID.String()+"@sundial>", m.Header.Get("Message-ID"))
			require.Equal(t, "1.0", m.Header.Get("MIME-Version"))
			_, err = m.Header.Date()
			require.NoError(t, err)
			require.Contains(t, m.Text, "hook-42")
			require.Contains(t, m.Text, "https://dash.sundial.test/p/"+b.msg.Project.ID.String()+"/hooks/hook-42")
			require.Contains(t, m.HTML, "hook-42")
			require.Contains(t, m.HTML, `<a href="https://dash.sundial.test/p/`+b.msg.Project.ID.String()+`/hooks/hook-42">`)
		})
	}
}

func TestEmailNonASCIISubject(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{TLS: smtptest.TLSNone})
	b := setup(t, setupOptions{})
	b.msg.Project.Name = "Café Zürich"

	require.NoError(t, b.sender.Send(context.Background(), emailTarget(emailConfig(srv, channelconfig.TLSNone, false)), b.msg))

	m := parseMail(t, srv.Wait(t, 1)[0].Data)
	raw := m.Header.Get("Subject")
	require.True(t, strings.HasPrefix(strings.ToLower(raw), "=?utf-8?q?"), raw)
	decoded, err := new(mime.WordDecoder).DecodeHeader(raw)
	require.NoError(t, err)
	require.Equal(t, b.msg.Subject(), decoded)
	require.Contains(t, m.Text, "Café Zürich")
}

func TestEmailRefusesServerWithoutSTARTTLS(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{TLS: smtptest.TLSNone})
	b := setup(t, setupOptions{roots: srv.CertPool})

	err := b.sender.Send(context.Background(), emailTarget(emailConfig(srv, channelconfig.TLSStartTLS, true)), b.msg)

	require.EqualError(t, err, `the SMTP server does not offer STARTTLS, which the channel requires (tls "starttls")`)
	require.Empty(t, srv.Messages())
}

func TestEmailWrongPassword(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{TLS: smtptest.TLSStartTLS, Username: smtpUser, Password: "the-right-one"})
	b := setup(t, setupOptions{roots: srv.CertPool})

	err := b.sender.Send(context.Background(), emailTarget(emailConfig(srv, channelconfig.TLSStartTLS, true)), b.msg)

	require.Error(t, err)
	require.Contains(t, err.Error(), "SMTP 535")
	require.Contains(t, err.Error(), "(authentication)")
	require.NotContains(t, err.Error(), smtpPassword)
	require.Empty(t, srv.Messages())
}

func TestEmailUntrustedCertificate(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{TLS: smtptest.TLSImplicit})
	b := setup(t, setupOptions{})

	err := b.sender.Send(context.Background(), emailTarget(emailConfig(srv, channelconfig.TLSImplicit, false)), b.msg)

	require.EqualError(t, err, "TLS: certificate signed by unknown authority")
	require.Empty(t, srv.Messages())
}

func TestEmailRejectedRecipient(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{TLS: smtptest.TLSNone, RejectRecipients: []string{recipients[1]}})
	b := setup(t, setupOptions{})

	err := b.sender.Send(context.Background(), emailTarget(emailConfig(srv, channelconfig.TLSNone, false)), b.msg)

	require.EqualError(t, err, "SMTP 550 mailbox unavailable (RCPT TO "+recipients[1]+")")
	require.Empty(t, srv.Messages())
}

func TestEmailGuarded(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{TLS: smtptest.TLSNone})
	b := setup(t, setupOptions{guard: egress.NewGuard(false, nil)})

	err := b.sender.Send(context.Background(), emailTarget(emailConfig(srv, channelconfig.TLSNone, false)), b.msg)

	require.EqualError(t, err, "destination 127.0.0.1 is a loopback address")
	require.Empty(t, srv.Messages())
}

func TestOwnersUseOperatorServerUnguarded(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{TLS: smtptest.TLSStartTLS, Username: smtpUser, Password: smtpPassword})
	owner := emailConfig(srv, channelconfig.TLSStartTLS, true)
	owner.To = nil
	// The guard is on: the operator's own server is trusted all the same.
	b := setup(t, setupOptions{roots: srv.CertPool, guard: egress.NewGuard(false, nil), owner: &owner})
	b.msg.Kind = message.KindQuotaThreshold
	b.msg.Alerts[0].HookId = ""
	b.msg.Alerts[0].ThresholdPercent = 100

	target := channel.Target{Kind: channel.KindOwners, To: []string{"owner@acme.test"}}
	require.NoError(t, b.sender.Send(context.Background(), target, b.msg))

	got := srv.Wait(t, 1)
	require.Equal(t, []string{"owner@acme.test"}, got[0].To)
	require.Equal(t, "[Sundial] acme: 100% of the hook quota used", parseMail(t, got[0].Data).Header.Get("Subject"))
}

func TestOwnersWithoutServer(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{})
	target := channel.Target{Kind: channel.KindOwners, To: []string{"owner@acme.test"}}
	err := b.sender.Send(context.Background(), target, b.msg)
	require.EqualError(t, err, "no SMTP server is configured for owner e-mails (SUNDIAL_NOTIFIER_SMTP_HOST)")
}

// scripted is a server that answers as a test's script says: what the
// real server of smtptest never answers.
type scripted struct {
	port     int
	accepted chan struct{}
}

// startScripted accepts one connection on 127.0.0.1 and sends greeting
// (none when empty: a server that never answers); then it answers each
// command with replies[its verb], "250 ok" when the script has none.
func startScripted(t *testing.T, greeting string, replies map[string]string) *scripted {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sc := &scripted{port: l.Addr().(*net.TCPAddr).Port, accepted: make(chan struct{})}
	conns := make(chan net.Conn, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		conns <- c
		close(sc.accepted)
		if greeting == "" {
			_, _ = io.Copy(io.Discard, c) // accepted, never greeted
			return
		}
		tc := textproto.NewConn(c)
		for reply := greeting; tc.PrintfLine("%s", reply) == nil; {
			line, err := tc.ReadLine()
			if err != nil {
				return
			}
			verb, _, _ := strings.Cut(line, " ")
			if reply = replies[strings.ToUpper(verb)]; reply == "" {
				reply = "250 ok"
			}
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		select {
		case c := <-conns:
			_ = c.Close()
		default:
		}
		<-done
	})
	return sc
}

func (sc *scripted) config(policy string) channelconfig.Email {
	return channelconfig.Email{Host: "127.0.0.1", Port: sc.port, TLS: policy, From: "sundial@alerts.test", To: recipients}
}

func TestEmailServerThatNeverAnswers(t *testing.T) {
	t.Parallel()
	sc := startScripted(t, "", nil)
	b := setup(t, setupOptions{timeout: 300 * time.Millisecond})

	err := b.sender.Send(context.Background(), emailTarget(sc.config(channelconfig.TLSNone)), b.msg)

	require.EqualError(t, err, "timeout after 300ms")
}

func TestEmailStoppedByCaller(t *testing.T) {
	t.Parallel()
	sc := startScripted(t, "", nil)
	b := setup(t, setupOptions{timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-sc.accepted // connected: stop as a SIGTERM would
		cancel()
	}()
	start := time.Now()

	err := b.sender.Send(ctx, emailTarget(sc.config(channelconfig.TLSNone)), b.msg)

	require.ErrorIs(t, err, context.Canceled)
	require.EqualError(t, err, "stopped before the send finished")
	// At once, not when each step's deadline (the timeout) passes.
	require.Less(t, time.Since(start), time.Minute)
}

func TestEmailRefusalNamesItsStep(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		greeting string
		replies  map[string]string
		policy   string
		want     string
	}{
		"greeting": {"554 5.3.2 no service here", nil, channelconfig.TLSNone,
			"SMTP 554 no service here (greeting)"},
		"starttls": {"220 hi", map[string]string{"EHLO": "250-hi\r\n250 STARTTLS", "STARTTLS": "454 4.7.0 TLS not available"},
			channelconfig.TLSStartTLS, "SMTP 454 TLS not available (STARTTLS)"},
		"mail from": {"220 hi", map[string]string{"MAIL": "451 4.3.0 try later"}, channelconfig.TLSNone,
			"SMTP 451 try later (MAIL FROM sundial@alerts.test)"},
		"data": {"220 hi", map[string]string{"DATA": "554 5.6.0 no thanks"}, channelconfig.TLSNone,
			"SMTP 554 no thanks (DATA)"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc := startScripted(t, tc.greeting, tc.replies)
			b := setup(t, setupOptions{})

			err := b.sender.Send(context.Background(), emailTarget(sc.config(tc.policy)), b.msg)

			require.EqualError(t, err, tc.want)
		})
	}
}

func TestEmailServerWithoutAUTH(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{TLS: smtptest.TLSStartTLS})
	b := setup(t, setupOptions{roots: srv.CertPool})

	err := b.sender.Send(context.Background(), emailTarget(emailConfig(srv, channelconfig.TLSStartTLS, true)), b.msg)

	require.EqualError(t, err, "the SMTP server does not offer authentication (AUTH), but the channel has a username")
	require.Empty(t, srv.Messages())
}

func TestOwnersRefuseHeaderInjection(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{TLS: smtptest.TLSNone})
	owner := emailConfig(srv, channelconfig.TLSNone, false)
	owner.From = "sundial@alerts.test\r\nBcc: spy@evil.test"
	b := setup(t, setupOptions{owner: &owner})

	err := b.sender.Send(context.Background(), channel.Target{Kind: channel.KindOwners, To: []string{"owner@acme.test"}}, b.msg)
	require.ErrorContains(t, err, "sender address: ")

	owner.From = "sundial@alerts.test"
	err = b.sender.Send(context.Background(), channel.Target{Kind: channel.KindOwners, To: []string{"owner@acme.test\r\nBcc: spy@evil.test"}}, b.msg)
	require.ErrorContains(t, err, "owner address: ")
	require.Empty(t, srv.Messages())
}

func TestEmailConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	b := setup(t, setupOptions{})
	cfg := channelconfig.Email{Host: "127.0.0.1", Port: port, TLS: channelconfig.TLSNone,
		From: "sundial@alerts.test", To: recipients}

	err = b.sender.Send(context.Background(), emailTarget(cfg), b.msg)

	require.EqualError(t, err, "connection refused")
}
