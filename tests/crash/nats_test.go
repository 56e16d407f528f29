package crash

import (
	"bytes"
	"io"
	"net"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
)

// natsConn is the test's own short-lived connection to NATS.
type natsConn struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func natsConnect(url string) (*natsConn, error) {
	nc, err := nats.Connect(url, nats.Name("crash-test"))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsConn{nc: nc, js: js}, nil
}

func (c *natsConn) close() { c.nc.Close() }

// natsProxy forwards TCP connections to a NATS server. Once frozen it stops
// forwarding what clients send (the server sees nothing more, and nothing
// is refused either: the client just waits) and reads the held bytes for
// DueHooks publishes. It lets a test see that a scheduler has committed
// claims (it publishes only after the commit) while none of their DueHooks
// has reached NATS, and kill it right there.
type natsProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	frozen bool
	held   []byte
	conns  []net.Conn
}

func newNATSProxy(t *testing.T, target string) *natsProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &natsProxy{ln: ln, target: target}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.accept()
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.Close()
		}
	})
	return p
}

// URL is the proxy's address as a NATS URL.
func (p *natsProxy) URL() string { return "nats://" + p.ln.Addr().String() }

func (p *natsProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed at cleanup
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go func() {
			_, _ = io.Copy(client, server)
			_ = client.Close()
		}()
		go p.up(client, server)
	}
}

// up copies client to server until frozen, then holds what the client
// sends.
func (p *natsProxy) up(client, server net.Conn) {
	defer server.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			frozen := p.frozen
			if frozen {
				p.held = append(p.held, buf[:n]...)
			}
			p.mu.Unlock()
			if !frozen {
				if _, werr := server.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// freeze stops forwarding from clients to the server, for good.
func (p *natsProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = true
}

// dueMsgID finds the Nats-Msg-Id of each held due publish, a DueHooks
// batch's: "dues:<digest>:<hooks>".
var dueMsgID = regexp.MustCompile(regexp.QuoteMeta(jetstream.MsgIDHeader+": ") +
	`(` + event.KindDues + `:[0-9a-f]+:(\d+))\r\n`)

// heldDueHooks counts the hooks in the due publishes held since the freeze
// (a publish repeated counts once).
func (p *natsProxy) heldDueHooks() int {
	p.mu.Lock()
	held := bytes.Clone(p.held)
	p.mu.Unlock()
	hooks := map[string]int{}
	for _, m := range dueMsgID.FindAllSubmatch(held, -1) {
		n, _ := strconv.Atoi(string(m[2]))
		hooks[string(m[1])] = n
	}
	total := 0
	for _, n := range hooks {
		total += n
	}
	return total
}
