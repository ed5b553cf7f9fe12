package dsl

import (
	"reflect"

	"github.com/streamsgroup/streamsgroup/serde"
)

// defaultSerde is Kafka's serde for T where Kafka Streams users get one without asking (String,
// ByteArray, Integer, Long), nil for any other type.
func defaultSerde[T any]() serde.Serde[T] {
	var s any
	switch any(*new(T)).(type) {
	case string:
		s = serde.String
	case []byte:
		s = serde.Bytes
	case int64:
		s = serde.Int64
	case int32:
		s = serde.Int32
	default:
		return nil
	}
	return s.(serde.Serde[T])
}

// orDefault is s, or T's default serde when s is nil.
func orDefault[T any](s serde.Serde[T]) serde.Serde[T] {
	if s != nil {
		return s
	}
	return defaultSerde[T]()
}

// typeName names T for error messages.
func typeName[T any]() string { return reflect.TypeFor[T]().String() }
