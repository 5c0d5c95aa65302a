# The profilekit host image, for those who build with Docker:
#
#   docker build \
#     --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(TZ=UTC0 git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ) \
#     -t profilekit .
#
# `make image` builds the same image without a Docker daemon (hack/image);
# a test there keeps the two in agreement: the build command, the files, the
# user, the working directory, the entrypoint, the environment and the labels.

FROM golang:1.26 AS build
ARG VERSION=dev
ARG REVISION=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" -o /out/profilekit ./examples/host

FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY hack/image/etc/passwd /etc/passwd
COPY hack/image/etc/group /etc/group
COPY --from=build /out/profilekit /usr/local/bin/profilekit
WORKDIR /home/profilekit
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/profilekit"]
LABEL org.opencontainers.image.title="profilekit" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/profilekit/profilekit" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
