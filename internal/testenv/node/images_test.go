package node

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	amconfig "github.com/prometheus/alertmanager/config"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// cISDIR is tar's mode bit of a directory.
const cISDIR = 0o40000

// ociImage is what an image archive of `make images` says about its image.
type ociImage struct {
	// digest is the digest of its manifest, from the index.
	digest               string
	name, platform, user string
	workdir              string
	entrypoint, cmd      []string
	files                map[string]int64  // path to mode, with tar's c_ISDIR (0o40000) for a directory
	owners               map[string]string // path to uid:gid
	contents             map[string][]byte // path of a file that is not executable to its content
}

// readImage reads the single image of an OCI archive, with the standard
// library only, as a runtime would: index, manifest, config, layers.
func readImage(archive string) (ociImage, error) {
	blobs := map[string][]byte{}
	f, err := os.Open(archive)
	if err != nil {
		return ociImage{}, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ociImage{}, fmt.Errorf("read %s: %w", archive, err)
		}
		if blobs[hdr.Name], err = io.ReadAll(tr); err != nil {
			return ociImage{}, fmt.Errorf("read %s: %w", archive, err)
		}
	}
	type descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
		Platform    struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	}
	raw := func(d descriptor) ([]byte, error) {
		b, ok := blobs["blobs/"+strings.Replace(d.Digest, ":", "/", 1)]
		if !ok {
			return nil, fmt.Errorf("blob %s is missing", d.Digest)
		}
		return b, nil
	}
	blob := func(d descriptor, v any) error {
		b, err := raw(d)
		if err != nil {
			return err
		}
		return json.Unmarshal(b, v)
	}
	var index struct{ Manifests []descriptor }
	if err := json.Unmarshal(blobs["index.json"], &index); err != nil {
		return ociImage{}, fmt.Errorf("read index.json: %w", err)
	}
	if len(index.Manifests) != 1 {
		return ociImage{}, fmt.Errorf("index.json has %d manifests, want 1", len(index.Manifests))
	}
	m := index.Manifests[0]
	img := ociImage{
		digest:   m.Digest,
		name:     m.Annotations["io.containerd.image.name"],
		platform: m.Platform.OS + "/" + m.Platform.Architecture,
		files:    map[string]int64{},
		owners:   map[string]string{},
		contents: map[string][]byte{},
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	if err := blob(m, &manifest); err != nil {
		return ociImage{}, fmt.Errorf("read manifest: %w", err)
	}
	var config struct {
		OS, Architecture string
		Config           struct {
			User, WorkingDir string
			Entrypoint, Cmd  []string
		}
	}
	if err := blob(manifest.Config, &config); err != nil {
		return ociImage{}, fmt.Errorf("read config: %w", err)
	}
	if p := config.OS + "/" + config.Architecture; p != img.platform {
		return ociImage{}, fmt.Errorf("config is for %s, index for %s", p, img.platform)
	}
	img.user, img.workdir = config.Config.User, config.Config.WorkingDir
	img.entrypoint, img.cmd = config.Config.Entrypoint, config.Config.Cmd
	for _, l := range manifest.Layers {
		b, err := raw(l)
		if err != nil {
			return ociImage{}, err
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return ociImage{}, fmt.Errorf("read layer %s: %w", l.Digest, err)
		}
		lr := tar.NewReader(zr)
		for {
			hdr, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return ociImage{}, fmt.Errorf("read layer %s: %w", l.Digest, err)
			}
			mode := hdr.Mode
			if hdr.Typeflag == tar.TypeDir {
				mode |= cISDIR
			}
			name := "/" + strings.TrimSuffix(hdr.Name, "/")
			img.files[name] = mode
			img.owners[name] = fmt.Sprintf("%d:%d", hdr.Uid, hdr.Gid)
			if hdr.Typeflag == tar.TypeReg && mode&0o111 == 0 {
				if img.contents[name], err = io.ReadAll(lr); err != nil {
					return ociImage{}, fmt.Errorf("read layer %s: %w", l.Digest, err)
				}
			}
		}
	}
	return img, nil
}

// dockerfile is the final stage of the Dockerfile: its USER, ENTRYPOINT and
// the binaries it copies into /bin (one per directory of cmd/).
type dockerfile struct {
	user       string
	entrypoint []string
	binaries   []string
}

func readDockerfile(t *testing.T, root string) dockerfile {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	defer f.Close()
	var d dockerfile
	copiesCmd := false
	for s := bufio.NewScanner(f); s.Scan(); {
		instr, arg, _ := strings.Cut(strings.TrimSpace(s.Text()), " ")
		switch instr {
		case "FROM":
			d, copiesCmd = dockerfile{}, false // only the final stage counts
		case "USER":
			d.user = arg
		case "ENTRYPOINT":
			require.NoError(t, json.Unmarshal([]byte(arg), &d.entrypoint), "ENTRYPOINT in exec form")
		case "COPY":
			// The build stage builds ./cmd/... into /out/.
			copiesCmd = copiesCmd || arg == "--from=build /out/ /bin/"
		}
	}
	require.True(t, copiesCmd, "the final stage of the Dockerfile copies the build stage's /out/ into /bin/")
	cmds, err := os.ReadDir(filepath.Join(root, "cmd"))
	require.NoError(t, err)
	for _, c := range cmds {
		d.binaries = append(d.binaries, "/bin/"+c.Name())
	}
	return d
}

// TestImageMatchesDockerfile checks that the podreload image of `make
// images` is the image the Dockerfile describes: same user, same
// entrypoint, the same binaries, executable, and no shell.
func TestImageMatchesDockerfile(t *testing.T) {
	archive, err := toolbin.Path(path.Join("images", "podreload-"+runtime.GOARCH+".tar"))
	require.NoError(t, err, "run `make images`")
	img, err := readImage(archive)
	require.NoError(t, err)
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	want := readDockerfile(t, root)

	require.Equal(t, "linux/"+runtime.GOARCH, img.platform)
	require.Equal(t, "ghcr.io/podreload/podreload:0.1.0", img.name, "the image deploy/controller.yaml runs")
	require.Equal(t, want.user, img.user)
	require.Equal(t, want.entrypoint, img.entrypoint)
	var binaries []string
	for p, mode := range img.files {
		if path.Dir(p) == "/bin" {
			binaries = append(binaries, p)
			require.Equal(t, int64(0o755), mode&0o777, p)
		}
	}
	slices.Sort(binaries)
	require.Equal(t, want.binaries, binaries)
	for _, sh := range []string{"/bin/sh", "/bin/bash", "/bin/busybox"} {
		require.NotContains(t, img.files, sh)
	}
}

// TestAlertmanagerImage checks that the Alertmanager images of `make
// host-images` (ours, and v0.25.0 of the node's takeover of an
// Alertmanager older than v0.30) have the layout of the upstream image
// (its Dockerfile), which prometheus-operator and the controller expect:
// /bin/alertmanager of the image's version, run as nobody from
// /alertmanager with the upstream default arguments, /etc/alertmanager and
// /alertmanager owned by nobody, and a default configuration that
// Alertmanager loads.
func TestAlertmanagerImage(t *testing.T) {
	for _, tc := range []struct {
		// image is the archive's name, binary the binary it holds
		// (bin/linux-<arch>/<binary>), version its version, if fixed.
		image, binary, version string
	}{
		{image: "alertmanager", binary: "alertmanager"},
		// The version e2e/node's Alertmanager of 3 replicas names.
		{image: "alertmanager-v0.25", binary: "alertmanager-v0.25", version: "v0.25.0"},
	} {
		t.Run(tc.image, func(t *testing.T) { checkAlertmanagerImage(t, tc.image, tc.binary, tc.version) })
	}
}

// checkAlertmanagerImage checks the Alertmanager image of the archive
// image of the binary bin/linux-<arch>/binary, of version if not empty.
func checkAlertmanagerImage(t *testing.T, image, binary, version string) {
	archive, err := toolbin.Path(path.Join("images", image+"-"+runtime.GOARCH+".tar"))
	require.NoError(t, err, "run `make host-images`")
	img, err := readImage(archive)
	require.NoError(t, err)
	bin, err := toolbin.Path(path.Join("linux-"+runtime.GOARCH, binary))
	require.NoError(t, err)
	bi, err := buildinfo.ReadFile(bin)
	require.NoError(t, err)
	// Built from the module's own command: the main module.
	require.Equal(t, "github.com/prometheus/alertmanager", bi.Main.Path, bin)
	binVersion := bi.Main.Version
	if binVersion == "(devel)" {
		// Built inside a copy of the module's source (the Makefile's
		// bin/alertmanager): its version is the one -ldflags stamps,
		// which -trimpath keeps out of the build information.
		binVersion = stampedVersion(t, bin)
	}
	if version != "" {
		require.Equal(t, version, binVersion, bin)
	}

	require.Equal(t, "linux/"+runtime.GOARCH, img.platform)
	require.Equal(t, "quay.io/prometheus/alertmanager:"+binVersion, img.name, "named for the version of its binary")
	require.Equal(t, "65534:65534", img.user, "nobody")
	require.Contains(t, string(img.contents["/etc/passwd"]), "nobody:x:65534:65534:")
	require.Equal(t, "/alertmanager", img.workdir)
	require.Equal(t, []string{"/bin/alertmanager"}, img.entrypoint)
	require.Equal(t, []string{"--config.file=/etc/alertmanager/alertmanager.yml", "--storage.path=/alertmanager"}, img.cmd)
	require.Equal(t, int64(0o755), img.files["/bin/alertmanager"]&0o777)
	for p, owner := range map[string]string{
		"/bin/alertmanager":                  "0:0",
		"/etc/alertmanager":                  "65534:65534",
		"/etc/alertmanager/alertmanager.yml": "65534:65534",
		"/alertmanager":                      "65534:65534",
	} {
		require.Contains(t, img.files, p)
		require.Equal(t, owner, img.owners[p], p)
	}
	require.NotZero(t, img.files["/alertmanager"]&cISDIR, "/alertmanager is a directory")
	cfg, err := amconfig.Load(string(img.contents["/etc/alertmanager/alertmanager.yml"]))
	require.NoError(t, err, "the default configuration")
	require.Equal(t, "default", cfg.Route.Receiver)
	for _, sh := range []string{"/bin/sh", "/bin/bash", "/bin/busybox"} {
		require.NotContains(t, img.files, sh)
	}
}

// stampedVersion returns the version Alertmanager's binary bin (of this
// platform) prints, "v0.34.0" for "alertmanager, version 0.34.0 (...".
func stampedVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, "--version").CombinedOutput()
	require.NoError(t, err, "%s --version: %s", bin, out)
	f := strings.Fields(string(out))
	require.GreaterOrEqual(t, len(f), 3, "%s --version: %s", bin, out)
	require.Equal(t, "version", f[1], "%s --version: %s", bin, out)
	return "v" + f[2]
}

// TestImageSBOMsAndDigests checks what `make host-images` writes next to each
// archive of this platform: the digest of the image's manifest, and a
// CycloneDX SBOM listing, for each binary of the image, every Go module
// and the Go version its build information holds (read from the binary
// the image was built from).
func TestImageSBOMsAndDigests(t *testing.T) {
	for _, tc := range []struct {
		name string
		// suffix follows, in the name of the binary the image was built
		// from (bin/linux-<arch>/<binary><suffix>), the name of the
		// image's binary.
		suffix string
	}{
		{name: "podreload"}, {name: "prometheus"}, {name: "alertmanager"}, {name: "pause"}, {name: "prometheus-config-reloader"},
		{name: "alertmanager-v0.25", suffix: "-v0.25"}, {name: "proxy"}, {name: "thanos"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := path.Join("images", tc.name+"-"+runtime.GOARCH)
			archive, err := toolbin.Path(base + ".tar")
			require.NoError(t, err, "run `make images`")
			img, err := readImage(archive)
			require.NoError(t, err)
			digest, err := os.ReadFile(strings.TrimSuffix(archive, ".tar") + ".digest")
			require.NoError(t, err)
			require.Equal(t, img.digest+"\n", string(digest))

			b, err := os.ReadFile(strings.TrimSuffix(archive, ".tar") + ".cdx.json")
			require.NoError(t, err)
			var bom struct {
				BOMFormat string `json:"bomFormat"`
				Metadata  struct {
					Component struct{ Name, Version, Purl string }
				}
				Components []struct {
					BOMRef        string `json:"bom-ref"`
					Type          string
					Name, Version string
					Purl          string
				}
				Dependencies []struct {
					Ref       string
					DependsOn []string
				}
			}
			require.NoError(t, json.Unmarshal(b, &bom))
			require.Equal(t, "CycloneDX", bom.BOMFormat)
			i := strings.LastIndex(img.name, ":")
			require.Positive(t, i, img.name)
			repo, tag := img.name[:i], img.name[i+1:]
			require.Equal(t, repo, bom.Metadata.Component.Name)
			require.Equal(t, tag, bom.Metadata.Component.Version)
			require.Contains(t, bom.Metadata.Component.Purl, "@"+strings.Replace(img.digest, ":", "%3A", 1)+"?")
			purls := map[string]string{}
			for _, c := range bom.Components {
				purls[c.BOMRef] = c.Purl
			}
			dependsOn := map[string][]string{}
			for _, d := range bom.Dependencies {
				dependsOn[d.Ref] = d.DependsOn
			}

			var binaries []string
			for p, mode := range img.files {
				if mode&0o111 != 0 && mode&cISDIR == 0 {
					binaries = append(binaries, p)
				}
			}
			require.NotEmpty(t, binaries)
			for _, p := range binaries {
				host, err := toolbin.Path(path.Join("linux-"+runtime.GOARCH, path.Base(p)+tc.suffix))
				require.NoError(t, err)
				bi, err := buildinfo.ReadFile(host)
				require.NoError(t, err)
				want := []string{"pkg:golang/stdlib@" + strings.TrimPrefix(bi.GoVersion, "go")}
				for _, d := range bi.Deps {
					if d.Replace != nil {
						d = d.Replace
					}
					want = append(want, "pkg:golang/"+d.Path+"@"+d.Version+"?type=module")
				}
				deps := dependsOn["file:"+p]
				for _, w := range want {
					require.Contains(t, deps, w, "%s: a module of %s", p, host)
					require.Equal(t, w, purls[w], "%s: the component of %s", p, w)
				}
			}
		})
	}
}
