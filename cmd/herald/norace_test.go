//go:build !race

package main

// raceBuild is true in a build with the race detector, whose shadow
// memory multiplies a process's resident set.
const raceBuild = false
