module github.com/glmul/glmul/examples/raylib

go 1.26.0

require (
	github.com/gen2brain/raylib-go/raylib v0.55.1
	github.com/glmul/glmul v0.0.0
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/ebitengine/purego v0.7.1 // indirect
	github.com/go-gl/gl v0.0.0-20231021071112-07e5d0ea2e71 // indirect
	golang.org/x/exp v0.0.0-20240506185415-9bf2ced13842 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/glmul/glmul => ../..
