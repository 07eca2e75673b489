package outbox_test

func crashChild() bool { return false }
