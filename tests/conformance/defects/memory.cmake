# Memory: writes out of bounds, wrong offsets, misalignment, leaks.
oar_add_defect(leak FILTER "abi/*" EXPECT not_certified AREA abi)
