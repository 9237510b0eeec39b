package app

import (
	"fmt"
	"net"
)

// Listen binds addr for the listener setting names (e.g. WORKER_HTTP_ADDR).
// Every process binds all its listeners this way before it starts work: a
// replica that cannot bind one (the port is taken) must exit non-zero
// rather than run on without its probes or metrics.
func Listen(setting, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s=%s (is another process using the port?): %w", setting, addr, err)
	}
	return ln, nil
}
