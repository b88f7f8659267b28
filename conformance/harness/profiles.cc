#include "conformance/harness/profiles.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <stdexcept>

#include "oar/ops.hpp"

namespace oar::conformance {
namespace {

using ops::DtypeBits;

// The dtypes a model runs in (the model suite's, when the device claims them).
constexpr uint32_t kModelDtypes = ops::kF32 | ops::kF16 | ops::kBF16;

struct PairTally {
  size_t total = 0;
  size_t passed = 0;
  size_t failed = 0;  // failed, crashed, timeout
  size_t known = 0;
  size_t unsupported = 0;
  std::string first_reason;  // of an unsupported or skipped test
};

std::string gap_reason(const PairTally& tally) {
  if (tally.total == 0) return "not run";
  if (tally.failed > 0) return fmt::format("{} test(s) failed, crashed or timed out", tally.failed);
  if (tally.unsupported > 0) {
    return fmt::format("{} test(s) unsupported ({})", tally.unsupported, tally.first_reason);
  }
  if (tally.known > 0) return fmt::format("{} known failure(s)", tally.known);
  if (tally.passed == 0) return fmt::format("every test skipped ({})", tally.first_reason);
  return "";
}

// The model suite's training loops (models/train_*) need the gradient and
// optimizer operators, which are outside the core profile: they belong to the
// full profile only.
bool is_training_model(const std::string& id) { return id.rfind("models/train_", 0) == 0; }

std::string plural(size_t count, const char* noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

}  // namespace

const char* profile_name(Profile profile) {
  switch (profile) {
    case Profile::kCore:
      return "core";
    case Profile::kPrimitives:
      return "primitives";
    case Profile::kFull:
      break;
  }
  return "full";
}

// Why each is here: docs/conformance.md, "Profiles".
const std::vector<CoreOperator>& core_operators() {
  static const std::vector<CoreOperator> kCore = {
      // What the suite's models run: an MLP, a conv net, a transformer block.
      {"matmul", kModelDtypes},
      {"add", kModelDtypes},
      {"mul", kModelDtypes},
      {"relu", kModelDtypes},
      {"gelu", kModelDtypes},
      {"silu", kModelDtypes},
      {"softmax", kModelDtypes},
      {"cross_entropy", kModelDtypes},
      {"conv2d", kModelDtypes},
      {"batch_norm", kModelDtypes},
      {"max_pool2d", kModelDtypes},
      {"avg_pool2d", kModelDtypes},
      {"layer_norm", kModelDtypes},
      {"rms_norm", kModelDtypes},
      {"transpose", kModelDtypes},
      {"rotary_embedding", kModelDtypes},
      {"scaled_dot_product_attention", kModelDtypes},
      // Tensor plumbing every framework emits, for data and for i64 ids and
      // labels: creating, making contiguous, converting, joining, splitting.
      {"fill", kModelDtypes | ops::kI64},
      {"copy", kModelDtypes | ops::kI64},
      {"cast", kModelDtypes | ops::kI64},
      {"concat", kModelDtypes | ops::kI64},
      {"slice", kModelDtypes | ops::kI64},
      // The first layer of every language model.
      {"embedding", kModelDtypes},
      // What losses, metrics and optimizer steps spell out by hand.
      {"sub", kModelDtypes},
      {"div", kModelDtypes},
      {"sum", kModelDtypes},
      {"mean", kModelDtypes},
      {"argmax", kModelDtypes},
  };
  return kCore;
}

uint32_t device_dtype_bits(const oar_device_properties_t& properties) {
  // Like i32, i64 and bool, the narrow integers (i8, u8, i16) need no claim:
  // every device has kernels for them.
  uint32_t bits = ops::kF32 | ops::kI32 | ops::kI64 | ops::kBool | ops::kSmallInts;
  if (properties.dtypes & OAR_DTYPE_SUPPORT_F16) bits |= ops::kF16;
  if (properties.dtypes & OAR_DTYPE_SUPPORT_BF16) bits |= ops::kBF16;
  if (properties.dtypes & OAR_DTYPE_SUPPORT_F64) bits |= ops::kF64;
  return bits;
}

std::vector<OpDtype> required_pairs(Profile profile, const oar_device_properties_t& properties) {
  const uint32_t claimed = device_dtype_bits(properties);
  std::map<std::string, uint32_t> core;
  for (const CoreOperator& entry : core_operators()) {
    if (ops::find_schema(entry.op) == nullptr) {
      throw std::logic_error(fmt::format("core operator {} is not in the schema", entry.op));
    }
    core[entry.op] = entry.dtypes;
  }
  std::vector<OpDtype> pairs;
  for (const ops::OpSchema& schema : ops::schemas()) {
    uint32_t bits = schema.dtypes & claimed;
    if (profile == Profile::kCore) {
      auto found = core.find(schema.name);
      bits = found == core.end() ? 0 : bits & found->second;
    }
    for (DLDataType dtype : ops::dtypes_in(bits)) pairs.push_back({schema.name, dtype_name(dtype)});
  }
  return pairs;
}

std::vector<TestCase> tests_of_profile(const std::vector<TestCase>& tests, Profile profile,
                                       const oar_device_properties_t& properties) {
  const std::vector<OpDtype> pairs = required_pairs(profile, properties);
  const std::set<OpDtype> wanted(pairs.begin(), pairs.end());
  std::vector<TestCase> selected;
  for (const TestCase& test : tests) {
    if (profile == Profile::kCore && is_training_model(test.id)) continue;
    if (test.area != "ops" || wanted.count({test.op, test.dtype})) selected.push_back(test);
  }
  return selected;
}

Coverage coverage(Profile profile, const oar_device_properties_t& properties,
                  const std::vector<TestResult>& results) {
  std::map<OpDtype, PairTally> tallies;
  for (const TestResult& result : results) {
    if (result.area != "ops" || result.op.empty()) continue;
    PairTally& tally = tallies[{result.op, result.dtype}];
    ++tally.total;
    if (result.unsupported) {
      ++tally.unsupported;
    } else if (result.status == Status::kPassed) {
      ++tally.passed;
    } else if (result.status == Status::kKnownFailure) {
      ++tally.known;
    } else if (is_failure(result.status)) {
      ++tally.failed;
    }
    if ((result.unsupported || result.status == Status::kSkipped) && tally.first_reason.empty()) {
      const std::string prefix = "unsupported: ";
      tally.first_reason = result.message.rfind(prefix, 0) == 0
                               ? result.message.substr(prefix.size())
                               : result.message;
    }
  }
  Coverage covered;
  covered.profile = profile;
  std::map<std::string, bool> operator_complete;  // op -> every pair covered
  std::vector<std::string> operator_order;
  for (const OpDtype& pair : required_pairs(profile, properties)) {
    ++covered.pairs;
    if (!operator_complete.count(pair.op)) operator_order.push_back(pair.op);
    auto found = tallies.find(pair);
    const std::string reason = gap_reason(found == tallies.end() ? PairTally{} : found->second);
    const bool ok = reason.empty();
    auto [it, added] = operator_complete.emplace(pair.op, ok);
    if (!added) it->second = it->second && ok;
    if (ok) {
      ++covered.pairs_covered;
    } else {
      covered.gaps.push_back({pair.op, pair.dtype, reason});
    }
  }
  covered.operators = operator_complete.size();
  for (const auto& [op, complete] : operator_complete) covered.operators_covered += complete;
  return covered;
}

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kCertified:
      return "certified";
    case Verdict::kPartial:
      return "partial";
    case Verdict::kNotCertified:
      break;
  }
  return "not_certified";
}

const char* profile_request_name(ProfileRequest request) {
  switch (request) {
    case ProfileRequest::kCore:
      return "core";
    case ProfileRequest::kFull:
      return "full";
    case ProfileRequest::kPrimitives:
      return "primitives";
    case ProfileRequest::kBest:
      break;
  }
  return "best";
}

ProfileRequest parse_profile_request(const std::string& name) {
  if (name == "best") return ProfileRequest::kBest;
  if (name == "core") return ProfileRequest::kCore;
  if (name == "full") return ProfileRequest::kFull;
  if (name == "primitives") return ProfileRequest::kPrimitives;
  throw std::invalid_argument("unknown profile '" + name + "' (best, core, full or primitives)");
}

std::string Judgement::coverage_text(const Coverage& coverage) {
  return fmt::format("{}/{} operators, {}/{} op×dtype pairs", coverage.operators_covered,
                     coverage.operators, coverage.pairs_covered, coverage.pairs);
}

std::string Judgement::headline() const {
  switch (verdict) {
    case Verdict::kCertified: {
      if (*profile == Profile::kPrimitives) {
        return fmt::format(
            "CERTIFIED (primitives profile): every operator runs, natively or through the core's "
            "decompositions into primitives, and every model: {}",
            coverage_text(full));
      }
      const Coverage& certified = *profile == Profile::kFull ? full : core;
      std::string text = fmt::format("CERTIFIED ({} profile): {}", profile_name(*profile),
                                     coverage_text(certified));
      if (*profile == Profile::kCore) text += "; full profile: " + coverage_text(full);
      return text;
    }
    case Verdict::kPartial:
      return "PARTIAL RUN (a filtered selection, not a certificate): nothing failed";
    case Verdict::kNotCertified:
      break;
  }
  return "NOT CERTIFIED: " + (reasons.empty() ? std::string("?") : reasons.front());
}

Judgement judge(const std::vector<TestResult>& results, const oar_device_properties_t& properties,
                ProfileRequest request, bool partial, bool decompositions) {
  Judgement judgement;
  judgement.request = request;
  judgement.partial = partial;
  judgement.core = coverage(Profile::kCore, properties, results);
  judgement.full = coverage(Profile::kFull, properties, results);

  size_t failures = 0;
  size_t models = 0;
  std::vector<std::string> excused;           // ABI and model tests the expectations excuse
  std::vector<std::string> training_excused;  // training loops: only full needs them
  size_t training = 0;
  for (const TestResult& result : results) {
    if (is_failure(result.status)) ++failures;
    if (result.area != "abi" && result.area != "models") continue;
    const bool trains = is_training_model(result.id);
    if (result.area == "models") ++(trains ? training : models);
    if (result.unsupported || result.status == Status::kKnownFailure) {
      (trains ? training_excused : excused).push_back(result.id);
    }
  }
  if (failures > 0) {
    judgement.reasons.push_back(
        fmt::format("{} failed, crashed or timed out", plural(failures, "test")));
  }
  if (partial) {
    judgement.verdict = failures > 0 ? Verdict::kNotCertified : Verdict::kPartial;
    return judgement;
  }
  if (!excused.empty()) {
    judgement.reasons.push_back(fmt::format(
        "{} of the ABI or the models marked unsupported or known to fail (first: {}); every "
        "profile needs them all",
        plural(excused.size(), "test"), excused.front()));
  }
  if (models == 0) judgement.reasons.push_back("no model ran; every profile needs the models");

  auto incomplete = [](const Coverage& coverage) {
    const Gap& first = coverage.gaps.front();
    return fmt::format("the {} profile is not covered: {} (first gap: {} {}: {})",
                       profile_name(coverage.profile), Judgement::coverage_text(coverage), first.op,
                       first.dtype, first.reason);
  };
  const bool trained = training > 0 && training_excused.empty();
  std::optional<Profile> met;
  if (decompositions || request == ProfileRequest::kPrimitives) {
    // What full asks, with operators that ran decomposed counting as run.
    Coverage primitives = judgement.full;
    primitives.profile = Profile::kPrimitives;
    if (request == ProfileRequest::kCore || request == ProfileRequest::kFull) {
      judgement.reasons.push_back(fmt::format(
          "the {} profile certifies kernels, and this run let the core decompose operators "
          "(OAR_DECOMPOSE is not 0); certify it without OAR_DECOMPOSE, or ask for --profile "
          "primitives",
          profile_request_name(request)));
    } else if (!primitives.complete()) {
      judgement.reasons.push_back(incomplete(primitives));
    } else if (!trained) {
      judgement.reasons.push_back(
          training == 0
              ? std::string("no training loop ran; the primitives profile needs them")
              : fmt::format("{} of the training loops marked unsupported or known to "
                            "fail (first: {}); the primitives profile needs them all",
                            plural(training_excused.size(), "test"), training_excused.front()));
    } else {
      met = Profile::kPrimitives;
    }
  } else if (request != ProfileRequest::kCore && judgement.full.complete() && trained) {
    met = Profile::kFull;
  } else if (request != ProfileRequest::kFull && judgement.core.complete()) {
    met = Profile::kCore;
  } else if (request == ProfileRequest::kFull && !judgement.full.complete()) {
    judgement.reasons.push_back(incomplete(judgement.full));
  } else if (request == ProfileRequest::kFull) {
    judgement.reasons.push_back(
        training == 0
            ? std::string("no training loop ran; the full profile needs them")
            : fmt::format("{} of the training loops marked unsupported or known to fail "
                          "(first: {}); the full profile needs them all",
                          plural(training_excused.size(), "test"), training_excused.front()));
  } else {
    judgement.reasons.push_back(incomplete(judgement.core));
  }
  if (judgement.reasons.empty()) {
    judgement.verdict = Verdict::kCertified;
    judgement.profile = met;
  }
  return judgement;
}

}  // namespace oar::conformance
