/* Linked into oar_collective_test in AddressSanitizer builds only.
 *
 * LeakSanitizer reads the stack of each leak at exit, when Open MPI has
 * already unloaded its components (MPI_Finalize dlcloses them): their
 * allocations then show one-frame stacks in no module, which no suppression
 * (lsan.supp) can tell from OAR's own. This dlclose, exported by the
 * executable so that it takes precedence over libc's for every library,
 * keeps every library loaded until the process ends, so the stacks name
 * Open MPI's modules (with LSAN_OPTIONS=fast_unwind_on_malloc=0: Open MPI is
 * built without frame pointers). A test process only: nothing is reloaded. */
int dlclose(void* handle) {
  (void)handle;
  return 0;
}
