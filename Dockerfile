# herald in a container: a static-enough binary (the SQLite driver needs cgo
# and libc) on a small Debian base, run as an unprivileged user.
#
#   docker build -t herald .
#   docker run -p 8080:8080 -e HERALD_API_KEY=... -v herald-data:/var/lib/herald \
#     -v $PWD/herald.yaml:/etc/herald/herald.yaml:ro herald
#
# The config's listen must be 0.0.0.0:8080 (or :8080) to be reached from
# outside the container, and its store under /var/lib/herald (or redis://).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
# The first build compiles SQLite (about 2 minutes).
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/herald ./cmd/herald

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
	&& rm -rf /var/lib/apt/lists/* \
	&& useradd --system --home-dir /var/lib/herald --create-home --shell /usr/sbin/nologin herald
COPY --from=build /out/herald /usr/local/bin/herald
USER herald
WORKDIR /var/lib/herald
VOLUME /var/lib/herald
EXPOSE 8080
ENTRYPOINT ["herald"]
CMD ["serve", "--config", "/etc/herald/herald.yaml"]
