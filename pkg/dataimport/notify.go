package dataimport

// Published notification types (CONTRACT §9): the events of the process
// timeline that partners are told about, with their versioned names. The
// other timeline events (staged, scheduled, started) are not published.
var publishedTypes = map[string]string{
	EventProcessed:       "import_process.complete-v1",
	EventErrored:         "import_process.error-v1",
	EventCancelled:       "import_process.cancelled-v1",
	EventDryRunSucceeded: "import_process.dry_run_complete-v1",
	EventDryRunErrored:   "import_process.dry_run_error-v1",
	EventPostImportOK:    "import_process.post_import.completed-v1",
	EventPostImportError: "import_process.post_import.error-v1",
}

// PublishedType is the notification type of a timeline event; ok is false
// for events that are not published.
func PublishedType(event string) (string, bool) {
	if t, ok := publishedTypes[event]; ok {
		return t, true
	}
	t, ok := partnerEventTypes[event]
	return t, ok
}

// PublishedEvents lists the timeline events that are published.
func PublishedEvents() []string {
	out := make([]string, 0, len(publishedTypes)+len(partnerEventTypes))
	for e := range publishedTypes {
		out = append(out, e)
	}
	for e := range partnerEventTypes {
		out = append(out, e)
	}
	return out
}

// PublishedTypes lists every notification type.
func PublishedTypes() []string {
	out := make([]string, 0, len(publishedTypes)+len(partnerEventTypes))
	for _, t := range publishedTypes {
		out = append(out, t)
	}
	for _, t := range partnerEventTypes {
		out = append(out, t)
	}
	return out
}
