package result

// HandleResults applies decoded results as Batcher.Handle does after
// decoding them, for results the wire could not carry.
var HandleResults = (*Batcher).handleResults
