// Command configdoc writes the configuration tables of docs/configuration.md
// from the services' Config structs (package configdoc). make generate runs it
// from the repository's root.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sundial-run/sundial/deploy/local/internal/configdoc"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	if err := configdoc.Write(*root); err != nil {
		fmt.Fprintln(os.Stderr, "configdoc:", err)
		os.Exit(1)
	}
}
