package dsl

import "reflect"

// Go types cannot all be null: a string or an int64 key or value has no null, where Kafka Streams'
// Java objects do. The DSL keeps a record's null key and value as flags beside the typed values
// (meta), and reads a function's result as null when it is the nil of a type that has one
// (nilCheck), or when it is the zero value made from a record whose value was null (nullFrom):
// what a Java function handing its null value on returns (a tombstone's key selected from its
// value is null). A null key does not make results null: records without keys are common input,
// and a key or value computed from their values must not be lost for being zero.

// nilCheck is the test of whether a value of T is nil, for the types that have nil (pointers,
// slices, maps, interfaces, functions, channels); nil for the others.
func nilCheck[T any]() func(T) bool {
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Func, reflect.Chan:
		return func(v T) bool { return reflect.ValueOf(&v).Elem().IsNil() }
	}
	return nil
}

// nullFrom says whether v, a function's result for a record, is null: the nil of its type, or its
// zero value when the record's value was null (fromNull).
func nullFrom[T any](isNil func(T) bool, v T, fromNull bool) bool {
	if isNil != nil && isNil(v) {
		return true
	}
	return fromNull && reflect.ValueOf(&v).Elem().IsZero()
}
