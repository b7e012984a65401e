.DEFAULT_GOAL := help

## help: list the targets
help:
	@grep -E '^## ' $(MAKEFILE_LIST) | sed 's/^## /  /'

## demo: run the server on SQLite with a flaky sink and watch messages flow
demo:
	go run ./cmd/herald demo

## run: run the server (SQLite in the working directory, a demo route)
run:
	go run ./cmd/herald serve

## test: run every test with the race detector (the README's test command)
test:
	go test -race -count=1 ./...

## lint: gofmt, go vet and staticcheck
lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && exit 1)
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@latest ./...

## bench: the W1–W7 workloads on SQLite, then the store benchmarks
bench:
	go run ./cmd/herald bench
	go test -run '^$$' -bench . -benchtime 5000x ./store/...

## build: build bin/herald (VERSION=v1.2.3 to name a release)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
build:
	@echo "building bin/herald $(VERSION): the first build compiles SQLite (about 2 minutes)"
	go build -trimpath -ldflags "-X main.version=$(VERSION)" -o bin/herald ./cmd/herald

## release: dist/herald-VERSION-OS-ARCH.tar.gz (the binary, LICENSE, README, docs, examples, deploy) and its SHA256SUMS
GOOS ?= $(shell go env GOOS)
GOARCH ?= $(shell go env GOARCH)
RELEASE := herald-$(VERSION)-$(GOOS)-$(GOARCH)
release: build
	rm -rf dist/$(RELEASE) && mkdir -p dist/$(RELEASE)
	cp -r bin/herald LICENSE README.md docs examples deploy dist/$(RELEASE)/
	tar -C dist -czf dist/$(RELEASE).tar.gz $(RELEASE)
	cd dist && sha256sum $(RELEASE).tar.gz > SHA256SUMS && cat SHA256SUMS

.PHONY: help demo run test lint bench build release
