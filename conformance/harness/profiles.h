// Certification profiles: what a verdict certifies, and how much of it a run
// covered.
//
// The core profile is the ABI, the models, and the operators and dtypes a
// framework cannot run a model without (core_operators(); the list and its
// reasons are in docs/conformance.md). The full profile is the ABI, the
// models, and every operator x dtype of the schema for the dtypes the device
// claims. Both are computed from the schema (oar::ops::schemas()) and the
// device's properties, never from what the suites registered, so that a suite
// that forgets a pair cannot certify it. The primitives profile asks what the
// full profile asks, of a run in which the core may decompose operators the
// plugin has no kernel for into primitives (docs/ops.md, "Primitives and
// decompositions"): it certifies that every operator and every model runs on
// the device, not that the plugin has every kernel. Core and full certify
// kernels: a run with decompositions on certifies neither.
//
// An operator x dtype pair is covered when at least one of its tests passed
// and none was failed, crashed, timed out, a known failure or unsupported by
// the plugin's expectations (tests skipped for a missing capability do not
// count against it). The ABI and the models belong to every profile: none of
// their tests may be unsupported or a known failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conformance/harness/runner.h"

namespace oar::conformance {

enum class Profile { kCore, kFull, kPrimitives };
// "core", "full", "primitives".
const char* profile_name(Profile profile);

// An operator of the core profile and the dtypes it needs there
// (oar::ops::DtypeBits), intersected with the schema's and the device's.
struct CoreOperator {
  const char* op;
  uint32_t dtypes;
};
const std::vector<CoreOperator>& core_operators();

// The dtypes a device claims, as oar::ops::DtypeBits: f32, i32, i64 and bool
// always; f16, bf16 and f64 when its properties list them.
uint32_t device_dtype_bits(const oar_device_properties_t& properties);

struct OpDtype {
  std::string op;
  std::string dtype;  // "f32", as TestCase::dtype
  bool operator<(const OpDtype& other) const {
    return op != other.op ? op < other.op : dtype < other.dtype;
  }
  bool operator==(const OpDtype& other) const { return op == other.op && dtype == other.dtype; }
};

// The operator x dtype pairs |profile| requires of a device of |properties|,
// in schema order.
std::vector<OpDtype> required_pairs(Profile profile, const oar_device_properties_t& properties);

// The tests of |tests| that |profile| needs: every test outside the ops area,
// and the ops tests of its pairs.
std::vector<TestCase> tests_of_profile(const std::vector<TestCase>& tests, Profile profile,
                                       const oar_device_properties_t& properties);

// A required pair that the run did not cover, and why.
struct Gap {
  std::string op;
  std::string dtype;
  std::string reason;  // "4 test(s) unsupported (no f16 convolution)", "not run", ...
};

struct Coverage {
  Profile profile = Profile::kFull;
  size_t operators = 0;  // operators with at least one required pair
  size_t operators_covered = 0;
  size_t pairs = 0;
  size_t pairs_covered = 0;
  std::vector<Gap> gaps;  // in schema order

  bool complete() const { return pairs_covered == pairs; }
};

Coverage coverage(Profile profile, const oar_device_properties_t& properties,
                  const std::vector<TestResult>& results);

enum class Verdict { kCertified, kNotCertified, kPartial };
// "certified", "not_certified", "partial".
const char* verdict_name(Verdict verdict);

// What the run was asked to certify: the best profile it covers, or one.
enum class ProfileRequest { kBest, kCore, kFull, kPrimitives };
// "best", "core", "full", "primitives"; parse_profile_request throws
// std::invalid_argument.
const char* profile_request_name(ProfileRequest request);
ProfileRequest parse_profile_request(const std::string& name);

struct Judgement {
  Verdict verdict = Verdict::kNotCertified;
  std::optional<Profile> profile;  // what is certified; empty unless kCertified
  ProfileRequest request = ProfileRequest::kBest;
  bool partial = false;  // a filtered run: never a certificate
  Coverage core;
  Coverage full;
  // Why it is not certified (failures, gaps in the ABI or the models, an
  // incomplete profile); empty when certified.
  std::vector<std::string> reasons;

  // One line: "CERTIFIED (full profile): 59/59 operators, 307/307 op x dtype
  // pairs", "PARTIAL RUN: ...", "NOT CERTIFIED: ...".
  std::string headline() const;
  // The coverage of one profile: "28/28 operators, 81/81 op x dtype pairs".
  static std::string coverage_text(const Coverage& coverage);
};

// The verdict on |results| for a device of |properties|. |partial|: the tests
// were narrowed by a filter. |decompositions|: the core was allowed to run
// operators through their decompositions (OAR_DECOMPOSE not 0): then only the
// primitives profile can be certified (what best certifies then).
Judgement judge(const std::vector<TestResult>& results, const oar_device_properties_t& properties,
                ProfileRequest request, bool partial, bool decompositions = false);

}  // namespace oar::conformance
