package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/projector"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// TestAlertmanager: rules-reloader reloads a real Alertmanager, any app with a
// reload URL or a signal, when the kubelet swaps its config volume.
func TestAlertmanager(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trigger func(amURL, exe string) []string
	}{
		{"http", func(amURL, _ string) []string { return []string{"--webhook-url=" + amURL + "/-/reload"} }},
		{"signal", func(_, exe string) []string { return []string{"--process-executable-name=" + filepath.Base(exe)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			vol := filepath.Join(root, "config")
			proj, err := projector.Start(context.Background(), vol, filepath.Join(root, "scratch"))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, proj.Close()) })
			setReceiver := func(name string) {
				_, err := proj.Project(map[string]string{"alertmanager.yml": fmt.Sprintf(
					"route:\n  receiver: %s\nreceivers:\n- name: %s\n", name, name)})
				require.NoError(t, err)
			}
			setReceiver("first")

			bin, err := toolbin.Path("alertmanager")
			require.NoError(t, err)
			// The signal trigger picks the process by name and refuses to
			// choose between several: Alertmanager runs under a name of its own.
			sighupDefault(t)
			bin = uniqueExe(t, bin)
			amAddr, reloaderAddr := freeAddr(t), freeAddr(t)
			amURL := "http://" + amAddr
			am := start(t, "alertmanager", nil, bin, "--config.file="+filepath.Join(vol, "alertmanager.yml"),
				"--storage.path="+filepath.Join(root, "data"), "--web.listen-address="+amAddr, "--cluster.listen-address=")
			eventually(t, "alertmanager ready", func() error {
				if err := am.exited(); err != nil {
					return err
				}
				return ok(t.Context(), amURL+"/-/ready")
			})
			reloader := start(t, "rules-reloader", nil, ours("rules-reloader"), append(tc.trigger(amURL, bin),
				"--volume-dir="+vol, "--web.listen-address="+reloaderAddr, "--log.level=debug")...)

			reloads := 0.0
			for _, receiver := range []string{"second", "third"} {
				setReceiver(receiver)
				eventually(t, "alertmanager runs receiver "+receiver, func() error {
					if err := am.exited(); err != nil {
						return err
					}
					var status struct {
						Config struct {
							Original string `json:"original"`
						} `json:"config"`
					}
					if err := getRawJSON(t.Context(), amURL+"/api/v2/status", &status); err != nil {
						return err
					}
					if !strings.Contains(status.Config.Original, "receiver: "+receiver+"\n") {
						return fmt.Errorf("alertmanager runs:\n%s", status.Config.Original)
					}
					n, err := metric(t.Context(), "http://"+reloaderAddr+"/metrics", "reloader_reloads_total")
					if err != nil {
						return fmt.Errorf("read reloader_reloads_total: %w", err)
					}
					if n <= reloads {
						return fmt.Errorf("reloader_reloads_total %v, want more than %v", n, reloads)
					}
					reloads = n
					return nil
				})
			}
			v, err := metric(t.Context(), amURL+"/metrics", "alertmanager_config_last_reload_successful")
			require.NoError(t, err)
			require.Equal(t, 1.0, v)
			require.NoError(t, reloader.exited())
		})
	}
}
