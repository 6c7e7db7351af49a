// CompositeDistribution: a distribution over several keys, built from a
// tensordict of parameters, sampling and scoring tensordicts
// (tensordict.nn.CompositeDistribution).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/nn/distributions.h"

namespace tensordict::nn {

// The components: the key of each one's parameters in `params` (a nested
// tensordict of its parameters by name, {"loc": ..., "scale": ...}) and
// its class. tensordict's extra_kwargs are the class's own options here
// (TanhNormal::cls({.low = -2}), Delta::cls(atol)).
using DistributionMap = std::vector<std::pair<NestedKey, DistributionClass>>;

struct CompositeDistributionOptions {
  // Where each component's sample goes: {name, sample key}; a name left out
  // keeps its own key.
  std::vector<std::pair<NestedKey, NestedKey>> name_map = {};
  // The key of the summed log-probability (log_prob_composite with
  // include_sum); "sample_log_prob" when unset.
  std::optional<NestedKey> log_prob_key = std::nullopt;
  // The key of the summed entropy (entropy_composite with include_sum);
  // "entropy" when unset.
  std::optional<NestedKey> entropy_key = std::nullopt;
};

// batch_shape() is the batch size of `params`; a sample of shape s has the
// batch size s + batch_shape(), with each component's value at its sample
// key (its event dims in its entry). The log-probability of the component
// at key k is at k + "_log_prob" (the suffix on the last part of a nested
// key), its entropy at k + "_entropy".
class CompositeDistribution {
 public:
  using Options = CompositeDistributionOptions;

  // KeyError when `params` has no tensordict at a name; the components'
  // own errors (a missing parameter) name the component.
  CompositeDistribution(const TensorDict& params, const DistributionMap& distribution_map, Options options = {});
  // tensordict's from_distributions: the distributions as they are, by
  // name; only the batch size of `params` is read.
  static CompositeDistribution from_distributions(
      const TensorDict& params, const std::vector<std::pair<NestedKey, std::shared_ptr<Distribution>>>& distributions,
      Options options = {});

  const std::vector<int64_t>& batch_shape() const { return batch_shape_; }
  // The components, by sample key, in the map's order.
  const std::vector<std::pair<NestedKey, std::shared_ptr<Distribution>>>& dists() const { return dists_; }
  // The component at a sample key; KeyError when there is none.
  const Distribution& operator[](const NestedKey& key) const;
  std::size_t size() const { return dists_.size(); }
  Keys sample_keys() const;
  NestedKey log_prob_key() const { return options_.log_prob_key.value_or(NestedKey("sample_log_prob")); }
  NestedKey entropy_key() const { return options_.entropy_key.value_or(NestedKey("entropy")); }

  TensorDict sample(at::IntArrayRef sample_shape = {}) const;
  // Every component must have rsample (NotImplementedError otherwise).
  TensorDict rsample(at::IntArrayRef sample_shape = {}) const;
  TensorDict mode() const;
  TensorDict mean() const;
  // Each component's deterministic value: Delta's param, the mode of a
  // Categorical, OneHotCategorical or TanhNormal, the mean of the others
  // (tensordict's fallback on the support); NotImplementedError when that
  // is not implemented.
  TensorDict deterministic_sample() const;

  // tensordict's log_prob while composite_lp_aggregate() is false (its
  // default): a new tensordict with one <key>_log_prob entry per component.
  TensorDict log_prob(const TensorDict& sample) const;
  // tensordict's log_prob while composite_lp_aggregate() is true: the sum
  // over the components and their event dims (the sample's batch shape).
  at::Tensor log_prob_sum(const TensorDict& sample) const;
  // tensordict's log_prob_composite: the per-component entries, and with
  // include_sum (default: composite_lp_aggregate()) their sum at
  // log_prob_key(); into `sample` (returned) while composite_lp_aggregate()
  // is true, else into a new tensordict.
  TensorDict log_prob_composite(const TensorDict& sample, std::optional<bool> include_sum = std::nullopt) const;

  // tensordict's entropy while composite_lp_aggregate() is false: one
  // <key>_entropy entry per component. A component without a closed form
  // gets a Monte Carlo estimate from samples_mc rsamples.
  TensorDict entropy(int64_t samples_mc = 1) const { return entropy_composite(samples_mc, false); }
  // tensordict's entropy while composite_lp_aggregate() is true: the sum
  // over the components and their event dims.
  at::Tensor entropy_sum(int64_t samples_mc = 1) const;
  // The per-component entries, and with include_sum (default:
  // composite_lp_aggregate()) their sum at entropy_key().
  TensorDict entropy_composite(int64_t samples_mc = 1, std::optional<bool> include_sum = std::nullopt) const;

  // CompositeDistribution({'cont': Normal(loc: ..., scale: ...), ...}).
  std::string repr() const;

  // For ProbabilisticTensorDictModule (tensordict's
  // distribution_class=CompositeDistribution with distribution_kwargs): the
  // module reads the params tensordict at its one in_key.
  static DistributionClass cls(DistributionMap distribution_map, Options options = {});

 private:
  CompositeDistribution(std::vector<int64_t> batch_shape, Options options)
      : batch_shape_(std::move(batch_shape)), options_(std::move(options)) {}
  // Sums `value` over the dims after the first `batch_dims`.
  static at::Tensor sum_events(const at::Tensor& value, int64_t batch_dims);
  at::Tensor component_entropy(const Distribution& dist, int64_t samples_mc) const;
  TensorDict gather(at::IntArrayRef sample_shape,
                    const std::function<at::Tensor(const Distribution&)>& value_of) const;

  std::vector<int64_t> batch_shape_;
  Options options_;
  std::vector<std::pair<NestedKey, std::shared_ptr<Distribution>>> dists_;
};

std::ostream& operator<<(std::ostream& os, const CompositeDistribution& dist);

}  // namespace tensordict::nn
