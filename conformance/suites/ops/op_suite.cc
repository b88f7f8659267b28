// The operator suite: every schema operator x every dtype the schema allows
// and the device claims x the shape, attribute and special-value cases of
// op_cases.cc, each compared against the reference with every tensor guarded
// (op_runner.h); and for each operator x dtype, the execution order and
// concurrency tests of stream_order.cc.
#include "conformance/harness/test.h"
#include "conformance/suites/ops/op_cases.h"
#include "conformance/suites/ops/stream_order.h"

namespace oar::conformance {

void register_gradient_checks(Registry& registry, const oar_device_properties_t& properties);

void register_op_suite(Registry& registry, const oar_device_properties_t& properties) {
  const uint32_t claimed = claimed_dtype_bits(properties);
  for (const ops::OpSchema& schema : ops::schemas()) {
    const std::string op = schema.name;
    const Family family = op_family(schema);
    for (DLDataType dt : ops::dtypes_in(schema.dtypes & claimed)) {
      const std::string dtype = dtype_name(dt);
      const std::string prefix = "ops/" + op + "/" + dtype + "/";
      std::vector<OpCase> cases = op_cases(schema, dt, claimed);
      if (cases.empty()) {
        registry.add({prefix + "cases_defined", "ops", op, dtype, "ops/" + op, [op](TestContext&) {
                        fail("the suite has no cases for operator " + op +
                             " (a conformance suite that predates the schema: update "
                             "conformance/suites/ops/op_cases.cc)");
                      }});
        continue;
      }
      register_execution_tests(registry, schema, dtype, prefix, "ops/" + op, cases, family);
      for (OpCase& c : cases) {
        const std::string id = prefix + c.name;
        registry.add({id, "ops", op, dtype, "ops/" + op,
                      [id, &schema, family, c = std::move(c)](TestContext& context) {
                        // The default stream: cached tensors outlive a test's
                        // stream in the caching allocator.
                        run_op_case(context.device.default_stream(), id, schema, c, family);
                      }});
      }
    }
  }
  register_index_error_tests(registry, properties);
  register_numerics_tests(registry, properties);
  register_gradient_checks(registry, properties);
}

}  // namespace oar::conformance
