// Probabilistic modules: InteractionType and its guard,
// ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
// (tensordict.nn.probabilistic).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensordict/nn/distributions.h"
#include "tensordict/nn/module.h"
#include "tensordict/nn/sequential.h"

namespace tensordict::nn {

// How a probabilistic module turns its distribution into a value.
enum class InteractionType { MODE, MEDIAN, MEAN, RANDOM };

// "MODE", ...
std::string_view to_string(InteractionType type);
// Case-insensitive; std::invalid_argument for an unknown name.
InteractionType interaction_type_from_str(std::string_view name);

// The current thread's interaction type; nullopt (the default) lets each
// module use its default_interaction_type.
std::optional<InteractionType> interaction_type();

// tensordict's `with set_interaction_type(...)`: sets this thread's type for
// the guard's lifetime, then restores the previous one.
class InteractionTypeGuard {
 public:
  explicit InteractionTypeGuard(std::optional<InteractionType> type = InteractionType::MODE);
  ~InteractionTypeGuard();
  InteractionTypeGuard(const InteractionTypeGuard&) = delete;
  InteractionTypeGuard& operator=(const InteractionTypeGuard&) = delete;

 private:
  std::optional<InteractionType> previous_;
};
using set_interaction_type = InteractionTypeGuard;

// Distribution parameter names -> tensordict keys. From a list of keys, each
// key's last part names the parameter: {"loc", "scale"} or
// {{"loc", {"params", "loc"}}, {"scale", "scale"}}.
class DistributionKeys {
 public:
  DistributionKeys(std::initializer_list<std::pair<std::string, NestedKey>> map) : map_(map) {}
  DistributionKeys(std::vector<std::pair<std::string, NestedKey>> map) : map_(std::move(map)) {}
  DistributionKeys(const Keys& keys);
  const std::vector<std::pair<std::string, NestedKey>>& map() const { return map_; }

 private:
  std::vector<std::pair<std::string, NestedKey>> map_;
};

// Options in the library's one style (op_options.h):
//   ProbabilisticOptions{.distribution = Normal::cls(), .return_log_prob = true}
struct ProbabilisticOptions {
  DistributionClass distribution = Delta::cls();
  // Used when interaction_type() is nullopt.
  InteractionType default_interaction_type = InteractionType::MODE;
  // Also write the sample's log-probability at "sample_log_prob".
  bool return_log_prob = false;
  // Samples used to estimate a mean with no closed form.
  int64_t n_empirical_estimate = 1000;
};

// Reads the distribution's parameters from in_keys, builds the distribution
// and writes a value at out_keys[0] chosen by the interaction type: MODE
// (mode), MEDIAN (median), MEAN (mean, else the mean of n_empirical_estimate
// samples), RANDOM (rsample when defined, else sample). With return_log_prob,
// out_keys ends with "sample_log_prob".
class ProbabilisticTensorDictModuleImpl : public TensorDictModuleBase {
 public:
  static constexpr const char* kSampleLogProbKey = "sample_log_prob";

  ProbabilisticTensorDictModuleImpl(DistributionKeys in_keys, Keys out_keys, ProbabilisticOptions options = {});

  using TensorDictModuleBase::run;
  std::string_view type_name() const override { return "ProbabilisticTensorDictModule"; }
  std::string repr() const override;

  std::shared_ptr<Distribution> get_dist(const TensorDict& td) const;
  const ProbabilisticOptions& options() const { return options_; }
  const DistributionKeys& dist_keys() const { return dist_keys_; }
  InteractionType default_interaction_type() const { return options_.default_interaction_type; }
  bool return_log_prob() const { return options_.return_log_prob; }

  // The value for `type` (nullopt: the default type).
  at::Tensor dist_sample(const Distribution& dist, std::optional<InteractionType> type) const;

 protected:
  TensorDict run_impl(const TensorDict& td, const std::optional<TensorDict>& out) override;

 private:
  // A sequence ending in this module runs it with requires_sample false when
  // the value is already at out_keys[0]: only the log-probability is written
  // (when asked for).
  friend class ProbabilisticTensorDictSequentialImpl;
  TensorDict run(const TensorDict& td, const std::optional<TensorDict>& out, bool requires_sample);
  // Writes the value (and log-probability) into `out`, else into `td`.
  TensorDict sample_into(const TensorDict& td, const std::optional<TensorDict>& out, bool requires_sample);

  DistributionKeys dist_keys_;
  ProbabilisticOptions options_;
};

class ProbabilisticTensorDictModule : public TensorDictModuleHolder<ProbabilisticTensorDictModuleImpl> {
 public:
  using Holder = TensorDictModuleHolder<ProbabilisticTensorDictModuleImpl>;
  ProbabilisticTensorDictModule(std::nullptr_t) : Holder(nullptr) {}
  ProbabilisticTensorDictModule(std::shared_ptr<ProbabilisticTensorDictModuleImpl> impl)
      : Holder(std::move(impl)) {}
  ProbabilisticTensorDictModule(DistributionKeys in_keys, Keys out_keys, ProbabilisticOptions options = {})
      : Holder(std::make_shared<ProbabilisticTensorDictModuleImpl>(std::move(in_keys), std::move(out_keys),
                                                                         std::move(options))) {}
};

// A sequence ending in a ProbabilisticTensorDictModule (std::invalid_argument
// otherwise, also from set/erase). The modules before it run under the last
// module's default interaction type unless one is set; when an earlier module
// already produces the last module's out_key, that value is kept and only its
// log-probability is computed. select_subsequence and slice keep this class
// when the probabilistic module survives, else give a plain
// TensorDictSequential (where tensordict raises). `inplace` and a selection
// place the outputs as for TensorDictSequential.
class ProbabilisticTensorDictSequentialImpl : public TensorDictSequentialImpl {
 public:
  explicit ProbabilisticTensorDictSequentialImpl(std::vector<ModuleRef> modules,
                                                 const SequentialOptions& options = {});
  explicit ProbabilisticTensorDictSequentialImpl(NamedModules modules, const SequentialOptions& options = {});

  std::string_view type_name() const override { return "ProbabilisticTensorDictSequential"; }

  // Runs every module but the last (the distribution's parameters); with
  // `out`, on a shallow copy of `td`, writing only their out_keys into `out`.
  TensorDict get_dist_params(const TensorDict& td, const std::optional<TensorDict>& out = std::nullopt);
  std::shared_ptr<Distribution> get_dist(const TensorDict& td);
  std::shared_ptr<Distribution> build_dist_from_params(const TensorDict& td) const;
  ProbabilisticTensorDictModuleImpl& last() const { return *last_; }

 protected:
  ProbabilisticTensorDictSequentialImpl(std::vector<ModulePtr> modules, std::vector<std::string> names,
                                        const SequentialOptions& options);

  TensorDict execute(const TensorDict& td) override;
  void check_modules(const std::vector<ModulePtr>& modules) const override;
  void modules_changed() override;
  std::shared_ptr<TensorDictSequentialImpl> make_like(std::vector<ModulePtr> modules,
                                                      std::vector<std::string> names) const override;

 private:
  // Runs the modules before the last on `td`.
  TensorDict run_det(const TensorDict& td);

  std::shared_ptr<ProbabilisticTensorDictModuleImpl> last_;
  // The out_keys of the modules before the last.
  Keys det_out_keys_;
  bool requires_sample_ = true;
};

class ProbabilisticTensorDictSequential : public TensorDictModuleHolder<ProbabilisticTensorDictSequentialImpl> {
 public:
  using Holder = TensorDictModuleHolder<ProbabilisticTensorDictSequentialImpl>;
  ProbabilisticTensorDictSequential(std::nullptr_t) : Holder(nullptr) {}
  ProbabilisticTensorDictSequential(std::shared_ptr<ProbabilisticTensorDictSequentialImpl> impl)
      : Holder(std::move(impl)) {}
  ProbabilisticTensorDictSequential(std::vector<ModuleRef> modules, const SequentialOptions& options = {})
      : Holder(std::make_shared<ProbabilisticTensorDictSequentialImpl>(std::move(modules), options)) {}
  ProbabilisticTensorDictSequential(NamedModules modules, const SequentialOptions& options = {})
      : Holder(std::make_shared<ProbabilisticTensorDictSequentialImpl>(std::move(modules), options)) {}
};

}  // namespace tensordict::nn
