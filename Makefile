# glmul: build, run and test on Debian/Ubuntu.
#   make run    install what is missing, build, multiply two 1024×1024 matrices
#   make test   install what is missing, run every test (GL ones on Mesa if no GPU)
#   make test-drivers  the GL tests again on Mesa's zink (over lavapipe) and softpipe
#   make test-embed    the engine host and a raylib program borrowing their contexts (Mesa)
#   make windows       bin/glmul.exe, cross-compiled with MinGW-w64; make test-windows runs it under Wine
#   make check-arm64   compile every package for linux/arm64 (a Raspberry Pi 5: GLES 3.1), cgo included
#   make results       measure again on llvmpipe the figures README quotes (docs/results/llvmpipe; minutes)
# ./make.sh ARGS does the same where make itself is not installed yet.

GO ?= go
BIN := bin/glmul

# Debian/Ubuntu packages: make, the cgo toolchain (gcc recommends libc6-dev,
# which --no-install-recommends would skip), EGL and GL headers and loaders
# (glvnd), Mesa's drivers (llvmpipe: OpenGL 4.5 on the CPU), the X11 headers
# that GLFW compiles against, Xvfb for the GLFW tests, and lavapipe (Mesa's
# Vulkan on the CPU) for zink in test-drivers; libxkbcommon-dev for raylib's
# GLFW in test-embed.
APT_PACKAGES := make gcc libc6-dev pkg-config \
	libegl-dev libgl-dev libegl1 libgl1 libegl-mesa0 libglx-mesa0 libgl1-mesa-dri \
	libx11-dev libxrandr-dev libxinerama-dev libxcursor-dev libxi-dev libxxf86vm-dev \
	xvfb xauth mesa-vulkan-drivers libxkbcommon-dev

# Windows on Linux: MinGW-w64 builds glmul.exe; Wine (its 64-bit loader is
# wine64) and Xvfb run it and the GL tests on Mesa through WGL.
WINDOWS_APT := gcc-mingw-w64-x86-64 wine wine64 xvfb xauth

# linux/arm64: a cross gcc and libc for cgo; go vet compiles and checks
# every package, C included, without linking (that would need arm64 GL
# libraries).
ARM64_APT := gcc-aarch64-linux-gnu libc6-dev-arm64-cross

# make results also runs bench/files: NumPy (and SciPy for .mtx) as the peer,
# GNU time for peak RSS.
RESULTS_APT := python3-numpy python3-scipy time

# Packages whose code never touches GL: tested with the race detector.
PURE_PKGS := ./cpu/... ./validate/... ./shaders/... ./internal/... ./glcompute/tuning/... ./glcompute/internal/dispatch/... \
	./glcompute/internal/thread/... ./cmd/glmul/internal/report/... ./cmd/glmul/internal/table/... \
	./cmd/glmul/internal/matfile/... ./cmd/glmul/internal/sweep/...

# Fuzz targets of the parsers, FUZZTIME each (CI runs them briefly). A count
# ("10000x") rather than a duration avoids Go 1.26's fuzzing coordinator race
# (golang/go#75804, fixed in Go 1.27), which fails a duration run with
# "context deadline exceeded" and no failing input on a loaded machine.
FUZZTIME ?= 10s
FUZZ_TARGETS := FuzzRead:./cmd/glmul/internal/matfile FuzzNPYHeaderDict:./cmd/glmul/internal/matfile FuzzParseShape:./cmd/glmul FuzzLookup:./shaders FuzzLoad:./glcompute/tuning

.PHONY: all deps build run test test-drivers test-embed windows test-windows check-arm64 results vet fuzz clean

all: build

deps:
	@scripts/deps.sh $(APT_PACKAGES)

build: deps
	$(GO) build -o $(BIN) ./cmd/glmul

run: build
	$(BIN) -n 1024

# vet also holds the house rules (issue 24): imports point down the layers
# of ARCHITECTURE.md, no file but a test over 600 lines, no function over 64.
vet: deps
	$(GO) vet ./...
	$(GO) run ./scripts/limits .

# The race detector also runs the GL code that hands work between
# goroutines as a product runs: inputs made beside Mul's Measure hook, and
# the check prepared beside the product.
test: vet
	$(GO) test -race $(PURE_PKGS)
	$(GO) test -race -count=1 -run 'TestMeasureHookWaitsForInputs' ./glcompute
	$(GO) test -race -count=1 ./cmd/glmul/internal/measure
	$(GO) test -count=1 ./...

test-drivers: deps
	GO=$(GO) scripts/test-drivers.sh

test-embed: deps
	GO=$(GO) scripts/test-embed.sh

windows: deps
	@scripts/deps.sh $(WINDOWS_APT)
	GO=$(GO) scripts/windows.sh build bin/glmul.exe

test-windows: deps
	@scripts/deps.sh $(WINDOWS_APT)
	GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc $(GO) vet ./...
	GO=$(GO) scripts/windows.sh test

check-arm64: deps
	@scripts/deps.sh $(ARM64_APT)
	GOOS=linux GOARCH=arm64 CGO_ENABLED=1 CC=aarch64-linux-gnu-gcc $(GO) vet ./...

results: deps
	@scripts/deps.sh $(RESULTS_APT)
	GO=$(GO) scripts/results.sh llvmpipe docs/results/llvmpipe

fuzz: deps
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t%%:*} $${t#*:} ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) $${t#*:} || exit 1; \
	done

clean:
	rm -rf bin
