package pgstore_test

func crashChild() bool { return false }
