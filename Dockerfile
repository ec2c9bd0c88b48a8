# All podreload binaries in one image: static, non-root, distroless.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/ ./cmd/...

# The collector alone (docker build --target collector), its entrypoint: the
# image of ghcr.io/podreload/collector, for charts that set no command
# (Grafana's sidecar.image, docs/collector.md).
FROM gcr.io/distroless/static-debian12:nonroot AS collector
COPY --from=build /out/collector /bin/collector
USER 65532:65532
ENTRYPOINT ["/bin/collector"]

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /bin/
USER 65532:65532
ENTRYPOINT ["/bin/config-reloader"]
