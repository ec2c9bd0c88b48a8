package collect

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func configMapObject(ns, name, key string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: dashboard()}, Data: map[string]string{key: "{}"}}
}

// proxy forwards TCP connections to the API server; blocked, it forwards
// nothing and sends no FIN: a network that drops every packet.
type proxy struct {
	l      net.Listener
	target string

	received atomic.Int64 // bytes from the API server

	mu    sync.Mutex
	open  chan struct{} // closed while forwarding
	conns []net.Conn
	wg    sync.WaitGroup
}

func newProxy(t testing.TB, host string) *proxy {
	t.Helper()
	u, err := url.Parse(host)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{l: l, target: u.Host, open: make(chan struct{})}
	close(p.open)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = l.Close()
		p.unblock()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) gate() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}

func (p *proxy) block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default:
	}
}

func (p *proxy) unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

func (p *proxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.track(c)
		p.wg.Go(func() {
			<-p.gate()
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				return
			}
			p.track(up)
			p.wg.Go(func() { p.pump(up, c, nil) })
			p.pump(c, up, &p.received)
		})
	}
}

func (p *proxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

// pump copies from src to dst, holding what it read while blocked, and
// counts the bytes into n.
func (p *proxy) pump(dst, src net.Conn, n *atomic.Int64) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			<-p.gate()
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return
			}
			if n != nil {
				n.Add(int64(k))
			}
		}
		if err != nil {
			return
		}
	}
}
