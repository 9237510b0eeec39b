package queue

// Coordinator bundles what the API uses to start and await account
// creation: enqueueing, the concurrency semaphore and the outcome notifier.
type Coordinator struct {
	*Client
	*Semaphore
	*Notifier
}
