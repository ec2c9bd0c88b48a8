package main

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// sbom returns the CycloneDX SBOM (JSON) of the image whose manifest has
// digest: the image, then each Go binary it holds with the Go modules and
// the standard library compiled into it, read from the build information
// the Go toolchain embeds in the binary (debug/buildinfo). It has no
// timestamp, so that the same image has the same SBOM.
func sbom(cfg config, digest v1.Hash) ([]byte, error) {
	repo, tag := splitReference(cfg.name)
	_, arch, _ := strings.Cut(cfg.platform, "/")
	image := cdx.Component{
		BOMRef:  "image",
		Type:    cdx.ComponentTypeContainer,
		Name:    repo,
		Version: tag,
		PackageURL: fmt.Sprintf("pkg:oci/%s@%s?arch=%s&repository_url=%s&tag=%s",
			path.Base(repo), strings.Replace(digest.String(), ":", "%3A", 1), arch, repo, tag),
		Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: digest.Hex}},
	}

	var components []cdx.Component
	modules := map[string]bool{} // bom-refs of the modules listed
	binaries := []string{}
	dependencies := []cdx.Dependency{}
	for _, dst := range slices.Sorted(func(yield func(string) bool) {
		for p := range cfg.files {
			if !yield(p) {
				return
			}
		}
	}) {
		src := cfg.files[dst]
		fi, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&0o111 == 0 {
			continue // data, such as CA certificates
		}
		bi, err := buildinfo.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("an executable of the image must be a Go binary: %w", err)
		}
		ref := "file:" + dst
		binaries = append(binaries, ref)
		components = append(components, cdx.Component{
			BOMRef:     ref,
			Type:       cdx.ComponentTypeApplication,
			Name:       path.Base(dst),
			Version:    moduleVersion(bi.Main.Version),
			Properties: &[]cdx.Property{{Name: "path", Value: dst}, {Name: "go.main", Value: bi.Path}, {Name: "go.version", Value: bi.GoVersion}},
		})
		var refs []string
		for _, m := range goModules(bi) {
			refs = append(refs, m.BOMRef)
			if !modules[m.BOMRef] {
				modules[m.BOMRef] = true
				components = append(components, m)
			}
		}
		dependencies = append(dependencies, cdx.Dependency{Ref: ref, Dependencies: &refs})
	}
	dependencies = append([]cdx.Dependency{{Ref: image.BOMRef, Dependencies: &binaries}}, dependencies...)

	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{Component: &image}
	bom.Components = &components
	bom.Dependencies = &dependencies
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom); err != nil {
		return nil, fmt.Errorf("encode SBOM: %w", err)
	}
	return buf.Bytes(), nil
}

// goModules returns the components of the main module, the dependencies
// (as replaced) and the standard library of bi, with package URLs as
// vulnerability databases name them.
func goModules(bi *debug.BuildInfo) []cdx.Component {
	module := func(m debug.Module) cdx.Component {
		if m.Replace != nil {
			m = *m.Replace
		}
		v := moduleVersion(m.Version)
		purl := "pkg:golang/" + m.Path
		if v != "" {
			purl += "@" + v
		}
		return cdx.Component{BOMRef: purl + "?type=module", Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: v, PackageURL: purl + "?type=module"}
	}
	out := []cdx.Component{module(bi.Main)}
	for _, d := range bi.Deps {
		out = append(out, module(*d))
	}
	std := strings.TrimPrefix(bi.GoVersion, "go")
	return append(out, cdx.Component{BOMRef: "pkg:golang/stdlib@" + std, Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: std, PackageURL: "pkg:golang/stdlib@" + std})
}

// moduleVersion is v, or empty for the "(devel)" of a main module built
// from a working tree.
func moduleVersion(v string) string {
	if v == "(devel)" {
		return ""
	}
	return v
}

// splitReference splits an image reference into its repository and tag.
func splitReference(ref string) (repo, tag string) {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, "latest"
}
