// imagebuild writes the OCI image archives of `make images` with
// go-containerregistry, and their CycloneDX SBOMs with cyclonedx-go (which
// imports the standard library only). A module of its own so that
// go-containerregistry and its dependencies do not move any version
// Prometheus pins in ../go.mod.
module github.com/podreload/podreload/tools/images

go 1.26.0

require (
	github.com/CycloneDX/cyclonedx-go v0.12.0
	github.com/google/go-containerregistry v0.22.1
)

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
