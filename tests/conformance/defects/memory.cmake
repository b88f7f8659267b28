# Memory: writes out of bounds, wrong offsets, misalignment, leaks.
# A leak, seen by the plugin's own memory report; one whose report says the
# memory is free again, seen by this process's resident memory.
oar_add_defect(leak FILTER "abi/limits/*" EXPECT not_certified AREA abi
               ID_REGEX "memory_free_returns_memory_no_leak")
oar_add_defect(leak_lies FILTER "abi/limits/memory_free*" EXPECT not_certified AREA abi
               ID_REGEX "memory_free_returns_memory_no_leak")
# d2h of whole 4-byte words: bytes past the host destination (guard bytes).
oar_add_defect(d2h_past_end FILTER "abi/memory/device/h2d_d2h*" EXPECT not_certified AREA abi
               ID_REGEX "h2d_d2h_odd_offsets_and_sizes")
# d2d above 16 MiB in chunks that forget the source offset.
oar_add_defect(d2d_large_chunks FILTER "abi/memory/device/large_copies*" EXPECT not_certified
               AREA abi ID_REGEX "large_copies_every_direction")
# Allocations of 16 MiB and more 16 bytes past min_alignment.
oar_add_defect(misaligned_large FILTER "abi/memory/*/large_allocations*" EXPECT not_certified
               AREA abi ID_REGEX "large_allocations_aligned")
