// Probabilistic modules: InteractionType and its guard,
// ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
// (tensordict.nn.probabilistic).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensordict/nn/composite.h"
#include "tensordict/nn/distributions.h"
#include "tensordict/nn/module.h"
#include "tensordict/nn/sequential.h"

namespace tensordict::nn {

// How a probabilistic module turns its distribution into a value.
enum class InteractionType { MODE, MEDIAN, MEAN, RANDOM };

// "MODE", ...
std::string_view to_string(InteractionType type);
// Case-insensitive; ValueError for an unknown name.
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

// tensordict's composite_lp_aggregate(): whether log-probabilities are
// summed under one key. It decides where a probabilistic module writes the
// log-probability of its sample: false (the default) gives "<key>_log_prob"
// for a sampled key (("agent", "action") -> ("agent", "action_log_prob")),
// true gives "sample_log_prob". The COMPOSITE_LP_AGGREGATE environment
// variable, read the first time the value is needed, sets the default
// (y, yes, t, true, on, 1 / n, no, f, false, off, 0, any case; another value
// is a ValueError "invalid truth value ...").
bool composite_lp_aggregate();

// The modes of composite_lp_aggregate(): per-component log-probabilities,
// one key per sampled key (false), or their sum under one key (true).
enum class LpAggregate : uint8_t { PerComponent, Aggregate };

// tensordict's `with set_composite_lp_aggregate(mode)`: sets the value for
// the guard's lifetime (mode Aggregate: true, as tensordict's default
// mode=True), then restores the previous one. Unlike the
// interaction type, the value is process-wide, as in tensordict: a module
// fixes its log-probability keys when it is built, and the threads that
// write the log-probabilities and those that read them must agree on the
// keys. Set it once, before the modules are built.
class CompositeLpAggregateGuard {
 public:
  explicit CompositeLpAggregateGuard(LpAggregate mode = LpAggregate::Aggregate);
  ~CompositeLpAggregateGuard();
  CompositeLpAggregateGuard(const CompositeLpAggregateGuard&) = delete;
  CompositeLpAggregateGuard& operator=(const CompositeLpAggregateGuard&) = delete;

 private:
  bool previous_;
};
using set_composite_lp_aggregate = CompositeLpAggregateGuard;

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
  // Also write the sample's log-probability, at log_prob_key() (see
  // composite_lp_aggregate()).
  bool return_log_prob = false;
  // The log-probability keys, one per sampled key, in place of the
  // "<key>_log_prob" defaults. A RuntimeError while composite_lp_aggregate()
  // is true.
  std::optional<Keys> log_prob_keys = std::nullopt;
  // The log-probability key: of the one sampled key, or, while
  // composite_lp_aggregate() is true, of their sum. A RuntimeError with
  // several sampled keys while composite_lp_aggregate() is false.
  // With return_log_prob, a custom key (log_prob_key or one of
  // log_prob_keys) equal to a sampled key, inside one or holding one is a
  // ValueError: the log-probability would overwrite the sample.
  std::optional<NestedKey> log_prob_key = std::nullopt;
  // Samples used to estimate a mean with no closed form.
  int64_t n_empirical_estimate = 1000;
  // Values per call ({2} or {2, 5}; empty: one value, no extra dim). The
  // output is the input (or `out`) expanded to num_samples + batch_size,
  // a new tensordict: the input does not get the outputs. RANDOM draws
  // num_samples values; another interaction type repeats its one value.
  std::vector<int64_t> num_samples = {};
};

// Reads the distribution's parameters from in_keys, builds the distribution
// and writes a value at out_keys[0] chosen by the interaction type: MODE
// (mode), MEDIAN (median), MEAN (mean, else the mean of n_empirical_estimate
// samples), RANDOM (rsample when defined, else sample). With return_log_prob,
// out_keys ends with the log-probability keys.
//
// The log-probability keys are fixed when the module is built, from
// composite_lp_aggregate() then:
//   sampled key        false (the default)            true
//   "action"           "action_log_prob"              "sample_log_prob"
//   ("agent", "a")     ("agent", "a_log_prob")        "sample_log_prob"
// log_prob_key() and log_prob_keys(), and a call with return_log_prob, are a
// RuntimeError once composite_lp_aggregate() differs from that value.
class ProbabilisticTensorDictModuleImpl : public TensorDictModuleBase {
 public:
  // The key of the log-probability while composite_lp_aggregate() is true.
  static constexpr const char* kSampleLogProbKey = "sample_log_prob";

  ProbabilisticTensorDictModuleImpl(DistributionKeys in_keys, Keys out_keys, ProbabilisticOptions options = {});

  using TensorDictModuleBase::run;
  std::string_view type_name() const override { return "ProbabilisticTensorDictModule"; }
  std::string repr() const override;

  // TypeError for a CompositeDistribution class: get_composite_dist.
  std::shared_ptr<Distribution> get_dist(const TensorDict& td) const;
  // With CompositeDistribution::cls(...): the distribution built from the
  // tensordict at the one in_key (TypeError for another class, or when the
  // entry is a tensor).
  std::shared_ptr<CompositeDistribution> get_composite_dist(const TensorDict& td) const;
  bool is_composite() const { return options_.distribution.make_composite != nullptr; }
  const ProbabilisticOptions& options() const { return options_; }
  const DistributionKeys& dist_keys() const { return dist_keys_; }
  InteractionType default_interaction_type() const { return options_.default_interaction_type; }
  bool return_log_prob() const { return options_.return_log_prob; }
  const std::vector<int64_t>& num_samples() const { return options_.num_samples; }

  // The key of the log-probability. RuntimeError when composite_lp_aggregate()
  // changed since the module was built, or when it is false and the module
  // has several log-probability keys (use log_prob_keys()).
  NestedKey log_prob_key() const;
  // One key per sampled key while composite_lp_aggregate() is false,
  // {log_prob_key()} while it is true. RuntimeError when
  // composite_lp_aggregate() changed since the module was built.
  Keys log_prob_keys() const;
  // The sampled keys: out_keys without the log-probability keys.
  const Keys& dist_sample_keys() const { return sample_keys_; }
  // The keys of the distribution's parameters: in_keys.
  const Keys& dist_params_keys() const { return in_keys_; }

  // The log-probability of the value at dist_sample_keys()[0] in `td`, under
  // the distribution built from `td` (or under `dist`). With a
  // CompositeDistribution: the sum over its components while
  // composite_lp_aggregate() is true, else a TypeError (the tensordict of
  // the components' is get_composite_dist(td)->log_prob(td)).
  at::Tensor log_prob(const TensorDict& td) const;
  at::Tensor log_prob(const TensorDict& td, const Distribution& dist) const;

  // The value for `type` (nullopt: the default type), with the num_samples
  // leading dims.
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
  // sample_into for a CompositeDistribution: the samples at its sample keys,
  // the log-probabilities at log_prob_keys() (their sum at log_prob_key()
  // too while composite_lp_aggregate() is true).
  TensorDict composite_sample_into(const TensorDict& td, const std::optional<TensorDict>& out,
                                   bool requires_sample);
  // The composite's value for `type` (dist_sample's rules), with the
  // num_samples leading dims.
  TensorDict composite_sample(const CompositeDistribution& dist, std::optional<InteractionType> type) const;
  // The ValueError for a custom log-probability key at, inside or holding a
  // sampled key.
  void check_log_prob_keys() const;
  // The RuntimeError when composite_lp_aggregate() differs from
  // aggregate_at_init_; returns the current value.
  bool check_aggregate(std::string_view property) const;

  DistributionKeys dist_keys_;
  ProbabilisticOptions options_;
  // out_keys as given: the sampled keys.
  Keys sample_keys_;
  // tensordict's _log_prob_key and _log_prob_keys after the defaults.
  std::optional<NestedKey> log_prob_key_;
  std::optional<Keys> log_prob_keys_;
  bool aggregate_at_init_;
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

// A sequence ending in a ProbabilisticTensorDictModule (ValueError
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

  // The log-probability of the last module's value in `td`: get_dist(td)
  // (which writes the parameters into `td`), then the last module's log_prob.
  at::Tensor log_prob(const TensorDict& td);

  // These gather the probabilistic modules of the sequence (nested sequences
  // included), the last module first, as tensordict does.
  // The log-probability keys of the probabilistic modules.
  Keys log_prob_keys() const;
  // The one key of log_prob_keys(); RuntimeError when there are several (or
  // none), or when a module's keys are a RuntimeError.
  NestedKey log_prob_key() const;
  Keys dist_sample_keys() const;
  Keys dist_params_keys() const;
  // The num_samples of the probabilistic modules, the last module's first:
  // the leading dims they add to the output.
  std::vector<int64_t> num_samples() const;

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
