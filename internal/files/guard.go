package files

import (
	"fmt"
	"net/http"

	"github.com/parleyhq/parley/internal/netguard"
)

// newClient returns the client remote fetches use: netguard's client over
// base with checkRedirect. See [Options.HTTPClient].
func newClient(base *http.Client, allowPrivate bool) *http.Client {
	c, err := netguard.Client(base, allowPrivate, checkRedirect)
	if err != nil {
		panic(fmt.Sprintf("files: Options.HTTPClient: %v (set AllowPrivateNetworks to use it as is)", err))
	}
	return c
}
