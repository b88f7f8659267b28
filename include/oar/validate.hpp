// What the validation layer (OAR_VALIDATE=1, RuntimeOptions::validate) has
// reported in this process: one line per misuse it refused and per leak it
// found, each "validation: <call>(<arguments>): <problem>". Meant for tests and
// tools; docs/runtime.md lists the checks.
#pragma once

#include <string>
#include <vector>

namespace oar {

// Every report so far, oldest first.
std::vector<std::string> validation_reports();
// Forgets the reports so far.
void clear_validation_reports();

}  // namespace oar
