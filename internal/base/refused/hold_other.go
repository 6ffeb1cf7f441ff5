//go:build !unix

package refused

func hold() (string, func(), error) { return released() }
