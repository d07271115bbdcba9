package config

import (
	"errors"

	"github.com/spf13/viper"
)

// newViper returns the viper instance that layers the settings: defaults,
// the built-in configuration and the file (merged as parsed by parse.go,
// never read by viper itself), env, flags.
func newViper() *viper.Viper { return viper.New() }

// joinErrors joins Errors into one error ("" lines never occur).
func joinErrors(errs []*Error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	list := make([]error, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	return errors.Join(list...)
}
