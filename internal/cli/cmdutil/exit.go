package cmdutil

// ExitError carries an exit status out of a command: 2 for a usage error
// (a bad flag, argument or configuration), 1 for a failure, 3 for what a
// command defines (a refused checkpoint, a conversation that breaks the
// model API's rules), 130 for a signal.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }
