# Execution order and concurrency: work that runs outside stream order, early
# completion, state shared between streams, lost failures.
oar_add_defect(copy_no_wait FILTER "abi/*" EXPECT not_certified AREA abi)
oar_add_defect(event_early FILTER "abi/*" EXPECT not_certified AREA abi)
