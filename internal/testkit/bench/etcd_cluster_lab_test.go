package bench

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet"
)

// etcdCluster is a real etcd cluster on consecutive namespace hosts: the
// same binary and flags as startEtcd's single node, each member with its
// own data directory under the bench's temp dir (the lab's hosts share
// one disk), peers over the lab's network.
type etcdCluster struct {
	hosts   []int                // the members' hosts
	procs   map[int]*labnet.Proc // by host
	clients map[int]*http.Client // a client on each member's host, to its 127.0.0.1
}

// startEtcdCluster starts one etcd member on each of hosts and waits
// until every member answers and they agree on a leader.
func (m *mutexBench) startEtcdCluster(hosts []int) *etcdCluster {
	m.b.Helper()
	c := &etcdCluster{hosts: hosts, procs: map[int]*labnet.Proc{}, clients: map[int]*http.Client{}}
	peer := func(i int) string { return fmt.Sprintf("http://%s:2380", m.lab.Host(i).Addr()) }
	var initial []string
	for _, i := range hosts {
		initial = append(initial, fmt.Sprintf("e%d=%s", i, peer(i)))
	}
	for _, i := range hosts {
		h := m.lab.Host(i)
		client := fmt.Sprintf("http://%s:%d", h.Addr(), etcdPort)
		c.procs[i] = h.Start(m.b, fmt.Sprintf("etcd-e%d", i), []string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time",
			m.etcd, "--name", fmt.Sprintf("e%d", i), "--data-dir", filepath.Join(m.dir, fmt.Sprintf("etcd-e%d", i)),
			"--listen-client-urls", client + fmt.Sprintf(",http://127.0.0.1:%d", etcdPort), "--advertise-client-urls", client,
			"--listen-peer-urls", peer(i), "--initial-advertise-peer-urls", peer(i),
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "bench-" + m.lab.Prefix(),
			"--logger", "zap", "--log-level", "warn"}, nil)
		c.clients[i] = etcdClientAt(h)
	}
	m.b.Cleanup(c.stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.leader(m.ctx); err == nil {
			break
		}
		for i, p := range c.procs {
			if p.Exited() {
				m.fatalf("etcd member on h%d exited:\n%s", i, p.Output())
			}
		}
		if time.Now().After(deadline) {
			_, err := c.leader(m.ctx)
			m.fatalf("etcd cluster on h%d-h%d did not agree on a leader within 30 s: %v", hosts[0], hosts[len(hosts)-1], err)
		}
		m.sleep(100 * time.Millisecond)
	}
	return c
}

// leader asks every member for its status and returns the leader's host
// once all of them answer and name the same leader.
func (c *etcdCluster) leader(ctx context.Context) (int, error) {
	var st struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	byID := map[string]int{}
	leader := ""
	for _, i := range c.hosts {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := etcdPost(ctx, c.clients[i], "/v3/maintenance/status", map[string]any{}, &st)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("h%d: %w", i, err)
		}
		if st.Leader == "" || st.Leader == "0" || leader != "" && st.Leader != leader {
			return 0, fmt.Errorf("h%d: leader %q, others %q", i, st.Leader, leader)
		}
		leader = st.Leader
		byID[st.Header.MemberID] = i
	}
	if i, ok := byID[leader]; ok {
		return i, nil
	}
	return 0, fmt.Errorf("leader %s is not a member", leader)
}

// stop SIGKILLs every member by its PID (each is reaped before it returns).
func (c *etcdCluster) stop() {
	for i, p := range c.procs {
		_ = p.Kill()
		delete(c.procs, i)
	}
	for _, cl := range c.clients {
		cl.CloseIdleConnections()
	}
}
