package delivery

// IdleRequestBuffers returns the capacity of the request buffer each idle
// connection of c keeps, for the external tests (conn_test.go).
func IdleRequestBuffers(c *Client) []int {
	c.conns.mu.Lock()
	defer c.conns.mu.Unlock()
	var caps []int
	for _, h := range c.conns.hosts {
		for _, idle := range h.idle {
			caps = append(caps, idle.out.Cap())
		}
	}
	return caps
}
