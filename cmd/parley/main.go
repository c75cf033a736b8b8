// Command parley is the Parley server and its administration CLI.
//
//	parley serve                       run the API server
//	parley migrate                     apply database migrations
//	parley keys create --app NAME      issue an app API key (printed once)
//	parley keys create --knowledge     issue a knowledge-base API key (printed once)
//	parley keys list                   list keys (never their secrets)
//	parley keys revoke ID              revoke a key
//	parley apps import FILE            import a Dify DSL file as an app (prints its name)
//	parley apps list|export|publish|delete
//	parley tools add-api NAME --schema FILE   register a custom API tool provider (OpenAPI/Swagger)
//	parley tools add-mcp NAME URL            register an MCP server (Streamable HTTP or HTTP+SSE)
//	parley tools list|refresh|delete
//
// Settings come from the environment (PARLEY_ADDR, PARLEY_DATA_DIR, PARLEY_CONFIG,
// PARLEY_DATABASE_URL, …); flags override them.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd(os.Getenv).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "parley:", err)
		os.Exit(1)
	}
}
