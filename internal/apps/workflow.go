package apps

// DecodeVersion reads the definition an app version keeps (store.AppVersion.Definition): the
// app as it was when the version was published.
func DecodeVersion(def string) (*App, error) { return decodeDefinition(def) }
