# Execution order and concurrency: work that runs outside stream order, early
# completion, state shared between streams, lost failures.
oar_add_defect(copy_no_wait FILTER "abi/streams/*" EXPECT not_certified AREA abi
               ID_REGEX "submission_order")
oar_add_defect(event_early FILTER "abi/events/*" EXPECT not_certified AREA abi
               ID_REGEX "query_false_until_held_work_completes")
# Deep queues: a 1024-slot ring that drops what does not fit; waits with a
# 2 ms timeout whose expiry is taken for success.
oar_add_defect(queue_drops_deep FILTER "abi/queues/*" EXPECT not_certified AREA abi
               ID_REGEX "^abi/queues/")
oar_add_defect(sync_early_deep FILTER "abi/queues/*" EXPECT not_certified AREA abi
               ID_REGEX "queues/stream_synchronize_covers")
oar_add_defect(event_sync_early FILTER "abi/queues/*" EXPECT not_certified AREA abi
               ID_REGEX "queues/event_synchronize_covers")
# Streams and events that see the wrong point: a query that is always idle, a
# wait that orders nothing, device_synchronize of the first stream only, a
# stream_destroy that drops the last unsubmitted batch.
oar_add_defect(query_always_idle FILTER "abi/streams/*" EXPECT not_certified AREA abi
               ID_REGEX "query_reports_pending_work_then_idle")
oar_add_defect(wait_event_ignored FILTER "abi/events/*" EXPECT not_certified AREA abi
               ID_REGEX "stream_waits_for_event_of_another_stream")
oar_add_defect(device_sync_first_stream FILTER "abi/lifecycle/device_synchronize*" EXPECT
               not_certified AREA abi ID_REGEX "device_synchronize_waits_for_every_stream")
oar_add_defect(destroy_drops_batch FILTER "abi/streams/*" EXPECT not_certified AREA abi
               ID_REGEX "destroy_runs_pending_work")
# Host callbacks that run at once on the caller's thread, twice, never, or
# early on a thread of their own: each fails fast, with its own message.
oar_add_defect(callback_inline FILTER "abi/callbacks/*" EXPECT not_certified AREA abi
               ID_REGEX "run_unprompted_on_a_plugin_thread_once" TIMEOUT 60 LIGHT)
oar_add_defect(callback_twice FILTER "abi/callbacks/*" EXPECT not_certified AREA abi
               ID_REGEX "run_unprompted_on_a_plugin_thread_once" TIMEOUT 60)
oar_add_defect(callback_never FILTER "abi/callbacks/*" EXPECT not_certified AREA abi
               ID_REGEX "run_unprompted_on_a_plugin_thread_once" TIMEOUT 60 LIGHT)
oar_add_defect(callback_early FILTER "abi/callbacks/*" EXPECT not_certified AREA abi
               ID_REGEX "held_back_by_earlier_work" TIMEOUT 60)
# Lost failures: an index error (no fault injection) that events, stream_query
# or device_synchronize do not report; i64 indices read as 32-bit ones, so
# that 2^32 + 1 is no error at all.
oar_add_defect(events_lose_errors FILTER "ops/gather/f32/*index*" EXPECT not_certified
               AREA ops OPS gather)
oar_add_defect(query_drops_errors FILTER "ops/gather/f32/*index*" EXPECT not_certified
               AREA ops OPS gather)
oar_add_defect(device_sync_drops_errors FILTER "ops/gather/f32/*index*" EXPECT not_certified
               AREA ops OPS gather)
oar_add_defect(index_i64_as_i32 FILTER "ops/embedding/f32/i64_index*" EXPECT not_certified
               AREA ops OPS embedding ID_REGEX "i64_index_past_the_end")
# An index error whose message names neither the operator, the index nor the bound.
oar_add_defect(index_error_vague FILTER "ops/gather/f32/i32_negative*" EXPECT not_certified
               AREA ops OPS gather ID_REGEX "i32_negative_index_fails_the_stream")
