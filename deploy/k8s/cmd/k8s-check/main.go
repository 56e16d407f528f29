// Command k8s-check renders every kustomize overlay under deploy/k8s and
// checks it, and docker-compose.yml, offline (package validate); with -out
// it also writes each overlay's rendering to DIR/NAME.yaml. It exits 1 on
// any problem, naming each.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sundial-run/sundial/deploy/k8s/validate"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	out := flag.String("out", "", "write each overlay's rendering to `DIR`/NAME.yaml")
	flag.Parse()
	if err := validate.All(*root, *out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("deploy/k8s overlays and docker-compose.yml: valid")
}
