// CompositeDistribution: several named distributions sampling and scoring
// tensordicts.
#include "tensordict/nn/composite.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <sstream>

#include "nn/text.h"
#include "tensordict/errors.h"
#include "tensordict/nn/probabilistic.h"

namespace tensordict::nn {

namespace {

// tensordict's _resolve_name_map.
NestedKey sample_key_of(const NestedKey& name, const std::vector<std::pair<NestedKey, NestedKey>>& name_map) {
  for (const auto& [from, to] : name_map) {
    if (from == name) return to;
  }
  return name;
}

}  // namespace

CompositeDistribution::CompositeDistribution(const TensorDict& params, const DistributionMap& distribution_map,
                                             Options options)
    : CompositeDistribution(params.batch_size().vec(), std::move(options)) {
  for (const auto& [name, cls] : distribution_map) {
    const std::optional<Value> entry = params.get_value(name);
    if (!entry || !entry->is_tensordict()) {
      throw KeyError(fmt::format("CompositeDistribution: no parameters at {} in params with keys {}",
                                 text::key_str(name),
                                 text::keys_repr(params.keys({.include_nested = true, .leaves_only = true}))));
    }
    if (!cls.make) {
      throw TypeError(fmt::format("CompositeDistribution: the class of {} ({}) does not build from parameters",
                                  text::key_str(name), cls.name));
    }
    DistParams dist_params;
    for (const auto& [key, value] : entry->tensordict().items()) {
      if (value.is_tensor()) dist_params[key.front()] = value.tensor();
    }
    std::shared_ptr<Distribution> dist;
    try {
      dist = cls.make(dist_params);
    } catch (const std::invalid_argument&) {
      // (An init-capture: clang before 16 cannot capture a structured binding.)
      rethrow_reworded([&key = name](std::string_view what) {
        return fmt::format("CompositeDistribution: {}: {}", text::key_str(key), what);
      });
    }
    dists_.emplace_back(sample_key_of(name, options_.name_map), std::move(dist));
  }
}

CompositeDistribution CompositeDistribution::from_distributions(
    const TensorDict& params, const std::vector<std::pair<NestedKey, std::shared_ptr<Distribution>>>& distributions,
    Options options) {
  CompositeDistribution composite(params.batch_size().vec(), std::move(options));
  for (const auto& [name, dist] : distributions) {
    if (!dist) throw ValueError(fmt::format("CompositeDistribution: the distribution of {} is null", text::key_str(name)));
    composite.dists_.emplace_back(sample_key_of(name, composite.options_.name_map), dist);
  }
  return composite;
}

const Distribution& CompositeDistribution::operator[](const NestedKey& key) const {
  for (const auto& [sample_key, dist] : dists_) {
    if (sample_key == key) return *dist;
  }
  throw KeyError(fmt::format("CompositeDistribution: no component at {} (the sample keys are {})", text::key_str(key),
                             text::keys_repr(sample_keys())));
}

Keys CompositeDistribution::sample_keys() const {
  Keys keys;
  for (const auto& [key, dist] : dists_) keys.push_back(key);
  return keys;
}

TensorDict CompositeDistribution::gather(at::IntArrayRef sample_shape,
                                         const std::function<at::Tensor(const Distribution&)>& value_of) const {
  std::vector<int64_t> batch_size(sample_shape.begin(), sample_shape.end());
  batch_size.insert(batch_size.end(), batch_shape_.begin(), batch_shape_.end());
  TensorDict out({}, batch_size);
  for (const auto& [key, dist] : dists_) out.set(key, value_of(*dist));
  return out;
}

TensorDict CompositeDistribution::sample(at::IntArrayRef sample_shape) const {
  return gather(sample_shape, [&](const Distribution& d) { return d.sample(sample_shape); });
}

TensorDict CompositeDistribution::rsample(at::IntArrayRef sample_shape) const {
  return gather(sample_shape, [&](const Distribution& d) { return d.rsample(sample_shape); });
}

TensorDict CompositeDistribution::mode() const {
  return gather({}, [](const Distribution& d) { return d.mode(); });
}

TensorDict CompositeDistribution::mean() const {
  return gather({}, [](const Distribution& d) { return d.mean(); });
}

TensorDict CompositeDistribution::deterministic_sample() const {
  return gather({}, [](const Distribution& d) {
    // tensordict's register: Delta's deterministic_sample, the mode where
    // the support is enumerable, else the mean (TanhNormal, whose mean has no
    // closed form, gives its mode as torchrl's does).
    if (const auto* delta = dynamic_cast<const Delta*>(&d)) return delta->param();
    const bool by_mode = dynamic_cast<const Categorical*>(&d) || dynamic_cast<const TanhNormal*>(&d);
    try {
      return by_mode ? d.mode() : d.mean();
    } catch (const NotImplementedError&) {
      throw NotImplementedError(fmt::format(
          "{} has no deterministic_sample, and its {} is not implemented, so CompositeDistribution cannot compute a "
          "deterministic sample for it. Use another interaction type.",
          d.name(), by_mode ? "mode" : "mean"));
    }
  });
}

at::Tensor CompositeDistribution::sum_events(const at::Tensor& value, int64_t batch_dims) {
  return value.dim() > batch_dims ? value.flatten(batch_dims, -1).sum(-1) : value;
}

TensorDict CompositeDistribution::log_prob(const TensorDict& sample) const {
  CompositeLpAggregateGuard per_component(LpAggregate::PerComponent);
  return log_prob_composite(sample, false);
}

at::Tensor CompositeDistribution::log_prob_sum(const TensorDict& sample) const {
  at::Tensor total;
  for (const auto& [key, dist] : dists_) {
    const at::Tensor lp = sum_events(dist->log_prob(sample.get(key)), sample.batch_dims());
    total = total.defined() ? total + lp : lp;
  }
  return total;
}

TensorDict CompositeDistribution::log_prob_composite(const TensorDict& sample, std::optional<bool> include_sum) const {
  const bool aggregate = composite_lp_aggregate();
  const bool with_sum = include_sum.value_or(aggregate);
  TensorDict out = aggregate ? sample : TensorDict({}, sample.batch_size());
  std::vector<std::pair<NestedKey, at::Tensor>> entries;
  at::Tensor total;
  for (const auto& [key, dist] : dists_) {
    const at::Tensor lp = dist->log_prob(sample.get(key));
    entries.emplace_back(text::add_suffix(key, "_log_prob"), lp);
    if (with_sum) {
      const at::Tensor summed = sum_events(lp, sample.batch_dims());
      total = total.defined() ? total + summed : summed;
    }
  }
  // Written once every component is scored: a failure leaves `sample` as it was.
  for (const auto& [key, lp] : entries) out.set(key, lp);
  if (with_sum && total.defined()) out.set(log_prob_key(), total);
  return out;
}

at::Tensor CompositeDistribution::component_entropy(const Distribution& dist, int64_t samples_mc) const {
  try {
    return dist.entropy();
  } catch (const NotImplementedError&) {
    const at::Tensor x = dist.rsample({samples_mc});
    return -dist.log_prob(x).mean(0);
  }
}

at::Tensor CompositeDistribution::entropy_sum(int64_t samples_mc) const {
  at::Tensor total;
  for (const auto& [key, dist] : dists_) {
    const at::Tensor e = sum_events(component_entropy(*dist, samples_mc), static_cast<int64_t>(batch_shape_.size()));
    total = total.defined() ? total + e : e;
  }
  return total;
}

TensorDict CompositeDistribution::entropy_composite(int64_t samples_mc, std::optional<bool> include_sum) const {
  const bool with_sum = include_sum.value_or(composite_lp_aggregate());
  TensorDict out({}, batch_shape_);
  at::Tensor total;
  for (const auto& [key, dist] : dists_) {
    const at::Tensor e = component_entropy(*dist, samples_mc);
    out.set(text::add_suffix(key, "_entropy"), e);
    if (with_sum) {
      const at::Tensor summed = sum_events(e, static_cast<int64_t>(batch_shape_.size()));
      total = total.defined() ? total + summed : summed;
    }
  }
  if (with_sum && total.defined()) out.set(entropy_key(), total);
  return out;
}

std::string CompositeDistribution::repr() const {
  std::string body;
  for (const auto& [key, dist] : dists_) {
    body += fmt::format("{}{}: {}", body.empty() ? "" : ", ", key.repr(), dist->repr());
  }
  return "CompositeDistribution({" + body + "})";
}

DistributionClass CompositeDistribution::cls(DistributionMap distribution_map, Options options) {
  Keys sample_keys;
  for (const auto& [name, cls] : distribution_map) sample_keys.push_back(sample_key_of(name, options.name_map));
  return {.name = "CompositeDistribution",
          .make = nullptr,
          .make_composite = [map = std::move(distribution_map), options = std::move(options)](
                                const TensorDict& params) {
            return std::make_shared<CompositeDistribution>(params, map, options);
          },
          .composite_sample_keys = std::move(sample_keys)};
}

std::ostream& operator<<(std::ostream& os, const CompositeDistribution& dist) { return os << dist.repr(); }

}  // namespace tensordict::nn
