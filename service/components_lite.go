//go:build lite

package service

import "github.com/e0dc0000/scribe/core"

// Light reports whether this is the light build, which holds no heavy
// component (HeavyTypes).
const Light = true

func heavyFactories() []core.Factory { return nil }
