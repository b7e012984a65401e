package config

import (
	"reflect"
	"slices"
	"strings"
)

// EnvNames returns, sorted, the names of the environment variables that
// the file's *_env keys name: where the server's own secrets are (API
// keys, carriers' tokens, webhook secrets).
func (f *File) EnvNames() []string {
	var names []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			t := v.Type()
			for i := range t.NumField() {
				field := t.Field(i)
				if !field.IsExported() {
					continue
				}
				key, _, _ := strings.Cut(field.Tag.Get("yaml"), ",")
				if fv := v.Field(i); fv.Kind() == reflect.String && strings.HasSuffix(key, "_env") {
					if fv.String() != "" {
						names = append(names, fv.String())
					}
				} else {
					walk(fv)
				}
			}
		}
	}
	walk(reflect.ValueOf(f))
	slices.Sort(names)
	return slices.Compact(names)
}
