//! Learning-rate schedules as pure functions of the step.
//!
//! PyTorch's `torch.optim.lr_scheduler` classes mutate an optimizer once per `step()`;
//! here a [`Schedule`] is a value and [`Schedule::lr`] maps a step number to a learning
//! rate, so resuming at step `n` needs nothing but `n` and nothing has to be saved. Each
//! variant uses the closed form of the PyTorch scheduler of the same name (with its
//! defaults in the constructors' documentation) and holds absolute learning rates: where
//! PyTorch multiplies the optimizer's `lr`, the constructors here take it as `base_lr`.
//! [`Schedule::warmup_cosine`] is nanoGPT's `get_lr`.

use std::f64::consts::PI;
use std::fmt;

/// A learning rate as a function of the step (0-based: step 0 is the first update).
///
/// ```
/// use tang_nn::schedule::Schedule;
/// // nanoGPT: warm up for 100 steps to 6e-4, decay to 6e-5 by step 5000.
/// let schedule = Schedule::warmup_cosine(6e-4, 6e-5, 100, 5000)?;
/// assert!(schedule.lr(0) < schedule.lr(99) && schedule.lr(5000) == 6e-5);
/// // Each step: opt.set_lr(schedule.lr(step)) (or Trainer::with_schedule).
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Schedule {
    /// `ConstantLR`: `base_lr * factor` before `total_iters`, `base_lr` from then on.
    Constant {
        /// The learning rate after the constant phase.
        base_lr: f64,
        /// The multiplier during the first `total_iters` steps.
        factor: f64,
        /// How many steps use `base_lr * factor`.
        total_iters: u64,
    },
    /// `StepLR`: `base_lr * gamma^(step / step_size)` (integer division).
    Step {
        /// The learning rate of the first `step_size` steps.
        base_lr: f64,
        /// How many steps between decays (at least 1).
        step_size: u64,
        /// The multiplier applied every `step_size` steps.
        gamma: f64,
    },
    /// `LinearLR`: the multiplier goes linearly from `start_factor` to `end_factor` over
    /// `total_iters` steps and then stays at `end_factor`.
    Linear {
        /// The learning rate that the factors multiply.
        base_lr: f64,
        /// The multiplier at step 0.
        start_factor: f64,
        /// The multiplier from step `total_iters` on.
        end_factor: f64,
        /// The length of the ramp in steps (at least 1).
        total_iters: u64,
    },
    /// `CosineAnnealingLR` (closed form):
    /// `eta_min + (base_lr - eta_min) * (1 + cos(pi * step / t_max)) / 2`.
    /// Past `t_max` the cosine goes on (back up towards `base_lr`), as PyTorch's does.
    Cosine {
        /// The learning rate at step 0.
        base_lr: f64,
        /// Half the cosine's period in steps (at least 1).
        t_max: u64,
        /// The learning rate at step `t_max`.
        eta_min: f64,
    },
    /// nanoGPT's `get_lr`: a linear warmup to `lr` (`lr * (step + 1) / (warmup_iters + 1)`),
    /// then a cosine decay to `min_lr` at `lr_decay_iters`, then `min_lr`.
    WarmupCosine {
        /// The peak learning rate.
        lr: f64,
        /// The learning rate after the decay.
        min_lr: f64,
        /// Steps of linear warmup.
        warmup_iters: u64,
        /// The step at which the decay reaches `min_lr` (more than `warmup_iters`).
        lr_decay_iters: u64,
    },
    /// `SequentialLR`: `schedules[i]` runs from `milestones[i - 1]` (or 0) and sees the
    /// step counted from the start of its phase.
    Sequential {
        /// One schedule per phase.
        schedules: Vec<Schedule>,
        /// The steps at which each next schedule takes over (strictly increasing, one
        /// fewer than `schedules`).
        milestones: Vec<u64>,
    },
}

/// A schedule's parameters do not describe a schedule.
///
/// ```
/// use tang_nn::schedule::Schedule;
/// let err = Schedule::step_lr(0.1, 0, 0.5).err().ok_or("step_size 0 is refused")?;
/// assert_eq!(err.schedule, "StepLR");
/// println!("{err}"); // says what to pass instead
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq)]
pub struct ScheduleError {
    /// The schedule (PyTorch's class name).
    pub schedule: &'static str,
    /// What is wrong and what to pass instead.
    pub detail: String,
}

crate::macros::debug_as_display!(ScheduleError);

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: {}", self.schedule, self.detail)
    }
}

impl std::error::Error for ScheduleError {}

fn invalid(schedule: &'static str, detail: String) -> ScheduleError {
    ScheduleError { schedule, detail }
}

/// Checks that each named value is finite and not negative (learning rates, factors).
fn non_negative(schedule: &'static str, values: &[(&str, f64)]) -> Result<(), ScheduleError> {
    for &(name, value) in values {
        if !value.is_finite() || value < 0.0 {
            return Err(invalid(
                schedule,
                format!("{name} is {value}; pass a finite value >= 0"),
            ));
        }
    }
    Ok(())
}

/// Checks that a length in steps is at least 1.
fn positive_steps(schedule: &'static str, name: &str, value: u64) -> Result<(), ScheduleError> {
    if value == 0 {
        return Err(invalid(schedule, format!("{name} is 0; pass at least 1")));
    }
    Ok(())
}

impl Schedule {
    /// A fixed learning rate (`ConstantLR` with `factor` 1).
    ///
    /// ```
    /// let schedule = tang_nn::schedule::Schedule::constant(3e-4)?;
    /// assert_eq!(schedule.lr(1_000_000), 3e-4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn constant(lr: f64) -> Result<Schedule, ScheduleError> {
        Schedule::constant_lr(lr, 1.0, 0)
    }

    /// PyTorch's `ConstantLR(factor, total_iters)` (PyTorch's defaults: `factor` 1/3,
    /// `total_iters` 5). `factor` must lie in `[0, 1]`, as PyTorch requires.
    ///
    /// ```
    /// use tang_nn::schedule::Schedule;
    /// let schedule = Schedule::constant_lr(0.1, 0.5, 2)?; // ConstantLR(opt(lr=0.1), factor=0.5, total_iters=2)
    /// assert_eq!((schedule.lr(1), schedule.lr(2)), (0.05, 0.1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn constant_lr(
        base_lr: f64,
        factor: f64,
        total_iters: u64,
    ) -> Result<Schedule, ScheduleError> {
        non_negative("ConstantLR", &[("base_lr", base_lr), ("factor", factor)])?;
        if factor > 1.0 {
            return Err(invalid(
                "ConstantLR",
                format!("factor is {factor}; pass a value between 0 and 1"),
            ));
        }
        Ok(Schedule::Constant {
            base_lr,
            factor,
            total_iters,
        })
    }

    /// PyTorch's `StepLR(step_size, gamma)` (PyTorch's default `gamma` is 0.1).
    ///
    /// ```
    /// use tang_nn::schedule::Schedule;
    /// let schedule = Schedule::step_lr(0.1, 30, 0.1)?; // StepLR(opt(lr=0.1), step_size=30)
    /// assert!((schedule.lr(30) - 0.01).abs() < 1e-12);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn step_lr(base_lr: f64, step_size: u64, gamma: f64) -> Result<Schedule, ScheduleError> {
        non_negative("StepLR", &[("base_lr", base_lr), ("gamma", gamma)])?;
        positive_steps("StepLR", "step_size", step_size)?;
        Ok(Schedule::Step {
            base_lr,
            step_size,
            gamma,
        })
    }

    /// PyTorch's `LinearLR(start_factor, end_factor, total_iters)` (PyTorch's defaults:
    /// 1/3, 1.0, 5). `start_factor` must lie in `(0, 1]` and `end_factor` in `[0, 1]`,
    /// as PyTorch requires.
    ///
    /// ```
    /// use tang_nn::schedule::Schedule;
    /// let schedule = Schedule::linear_lr(0.1, 0.5, 1.0, 4)?; // LinearLR(opt(lr=0.1), 0.5, 1.0, 4)
    /// assert_eq!((schedule.lr(0), schedule.lr(4)), (0.05, 0.1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn linear_lr(
        base_lr: f64,
        start_factor: f64,
        end_factor: f64,
        total_iters: u64,
    ) -> Result<Schedule, ScheduleError> {
        non_negative(
            "LinearLR",
            &[
                ("base_lr", base_lr),
                ("start_factor", start_factor),
                ("end_factor", end_factor),
            ],
        )?;
        if start_factor == 0.0 || start_factor > 1.0 || end_factor > 1.0 {
            return Err(invalid(
                "LinearLR",
                format!(
                    "start_factor {start_factor} must be in (0, 1] and end_factor {end_factor} in [0, 1]"
                ),
            ));
        }
        positive_steps("LinearLR", "total_iters", total_iters)?;
        Ok(Schedule::Linear {
            base_lr,
            start_factor,
            end_factor,
            total_iters,
        })
    }

    /// PyTorch's `CosineAnnealingLR(T_max, eta_min)` (PyTorch's default `eta_min` is 0).
    ///
    /// ```
    /// use tang_nn::schedule::Schedule;
    /// let schedule = Schedule::cosine_annealing_lr(0.1, 100, 0.0)?; // CosineAnnealingLR(opt, T_max=100)
    /// assert!((schedule.lr(50) - 0.05).abs() < 1e-12 && schedule.lr(100).abs() < 1e-12);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cosine_annealing_lr(
        base_lr: f64,
        t_max: u64,
        eta_min: f64,
    ) -> Result<Schedule, ScheduleError> {
        non_negative(
            "CosineAnnealingLR",
            &[("base_lr", base_lr), ("eta_min", eta_min)],
        )?;
        positive_steps("CosineAnnealingLR", "t_max", t_max)?;
        Ok(Schedule::Cosine {
            base_lr,
            t_max,
            eta_min,
        })
    }

    /// nanoGPT's `get_lr` (its defaults: `lr` 6e-4, `min_lr` 6e-5, `warmup_iters` 2000,
    /// `lr_decay_iters` 600000).
    ///
    /// ```
    /// use tang_nn::schedule::Schedule;
    /// let schedule = Schedule::warmup_cosine(1e-3, 1e-4, 9, 100)?;
    /// assert!((schedule.lr(0) - 1e-4).abs() < 1e-12); // lr * (0 + 1) / (9 + 1)
    /// assert_eq!(schedule.lr(200), 1e-4); // min_lr past lr_decay_iters
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn warmup_cosine(
        lr: f64,
        min_lr: f64,
        warmup_iters: u64,
        lr_decay_iters: u64,
    ) -> Result<Schedule, ScheduleError> {
        non_negative("warmup_cosine", &[("lr", lr), ("min_lr", min_lr)])?;
        if lr_decay_iters <= warmup_iters {
            return Err(invalid(
                "warmup_cosine",
                format!(
                    "lr_decay_iters ({lr_decay_iters}) must be greater than warmup_iters ({warmup_iters})"
                ),
            ));
        }
        Ok(Schedule::WarmupCosine {
            lr,
            min_lr,
            warmup_iters,
            lr_decay_iters,
        })
    }

    /// PyTorch's `SequentialLR(schedulers, milestones)`: `schedules[0]` until
    /// `milestones[0]`, then `schedules[1]` restarted at its step 0, and so on.
    ///
    /// ```
    /// use tang_nn::schedule::Schedule;
    /// // SequentialLR(opt, [LinearLR(...), CosineAnnealingLR(...)], milestones=[10])
    /// let warmup = Schedule::linear_lr(0.1, 0.1, 1.0, 10)?;
    /// let decay = Schedule::cosine_annealing_lr(0.1, 90, 0.0)?;
    /// let schedule = Schedule::sequential(vec![warmup, decay], vec![10])?;
    /// assert_eq!(schedule.lr(10), 0.1); // the cosine's step 0
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sequential(
        schedules: Vec<Schedule>,
        milestones: Vec<u64>,
    ) -> Result<Schedule, ScheduleError> {
        if schedules.is_empty() || milestones.len() + 1 != schedules.len() {
            return Err(invalid(
                "SequentialLR",
                format!(
                    "{} schedules need {} milestones, got {}; pass one milestone between each two schedules",
                    schedules.len(),
                    schedules.len().saturating_sub(1),
                    milestones.len()
                ),
            ));
        }
        if milestones.windows(2).any(|w| w[0] >= w[1]) {
            return Err(invalid(
                "SequentialLR",
                format!("milestones {milestones:?} must be strictly increasing"),
            ));
        }
        Ok(Schedule::Sequential {
            schedules,
            milestones,
        })
    }

    /// The learning rate for the update at `step` (0-based).
    ///
    /// ```
    /// use tang_nn::schedule::Schedule;
    /// let schedule = Schedule::step_lr(1.0, 2, 0.5)?;
    /// let lrs: Vec<f64> = (0..6).map(|step| schedule.lr(step)).collect();
    /// assert_eq!(lrs, [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lr(&self, step: u64) -> f64 {
        match self {
            Schedule::Constant {
                base_lr,
                factor,
                total_iters,
            } => {
                if step < *total_iters {
                    base_lr * factor
                } else {
                    *base_lr
                }
            }
            Schedule::Step {
                base_lr,
                step_size,
                gamma,
            } => {
                // powi takes i32: saturate, since gamma^(2^31) is already 0 or inf.
                let decays = i32::try_from(step / step_size).unwrap_or(i32::MAX);
                base_lr * gamma.powi(decays)
            }
            Schedule::Linear {
                base_lr,
                start_factor,
                end_factor,
                total_iters,
            } => {
                let done = step.min(*total_iters) as f64 / *total_iters as f64;
                base_lr * (start_factor + (end_factor - start_factor) * done)
            }
            Schedule::Cosine {
                base_lr,
                t_max,
                eta_min,
            } => {
                eta_min
                    + (base_lr - eta_min) * (1.0 + (PI * step as f64 / *t_max as f64).cos()) / 2.0
            }
            Schedule::WarmupCosine {
                lr,
                min_lr,
                warmup_iters,
                lr_decay_iters,
            } => {
                // The same operations in the same order as nanoGPT's get_lr, so the
                // result is the same double.
                if step < *warmup_iters {
                    return lr * (step + 1) as f64 / (warmup_iters + 1) as f64;
                }
                if step > *lr_decay_iters {
                    return *min_lr;
                }
                let ratio = (step - warmup_iters) as f64 / (lr_decay_iters - warmup_iters) as f64;
                min_lr + 0.5 * (1.0 + (PI * ratio).cos()) * (lr - min_lr)
            }
            Schedule::Sequential {
                schedules,
                milestones,
            } => {
                // bisect_right, as PyTorch: at a milestone the next schedule starts.
                let phase = milestones.partition_point(|&m| m <= step);
                let start = if phase == 0 { 0 } else { milestones[phase - 1] };
                schedules[phase].lr(step - start)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorch_closed_forms() {
        let c = Schedule::constant_lr(0.1, 1.0 / 3.0, 5).unwrap();
        assert_eq!(c.lr(4), 0.1 / 3.0);
        assert_eq!(c.lr(5), 0.1);
        let s = Schedule::step_lr(1.0, 30, 0.1).unwrap();
        assert_eq!((s.lr(29), s.lr(30), s.lr(60)), (1.0, 0.1, 0.1f64.powi(2)));
        let l = Schedule::linear_lr(1.0, 0.25, 1.0, 4).unwrap();
        assert_eq!(
            [l.lr(0), l.lr(2), l.lr(4), l.lr(100)],
            [0.25, 0.625, 1.0, 1.0]
        );
        let k = Schedule::cosine_annealing_lr(1.0, 10, 0.1).unwrap();
        assert_eq!(k.lr(0), 1.0);
        assert!((k.lr(5) - 0.55).abs() < 1e-15);
        assert!((k.lr(10) - 0.1).abs() < 1e-15);
        assert!(
            (k.lr(15) - 0.55).abs() < 1e-15,
            "the cosine continues past t_max"
        );
        assert_eq!(Schedule::constant(3e-4).unwrap().lr(123_456), 3e-4);
        assert_eq!(Schedule::step_lr(1.0, 1, 0.5).unwrap().lr(u64::MAX), 0.0);
    }

    #[test]
    fn sequential_restarts_each_phase_at_its_milestone() {
        let warm = Schedule::linear_lr(1.0, 0.1, 1.0, 10).unwrap();
        let decay = Schedule::cosine_annealing_lr(1.0, 100, 0.0).unwrap();
        let seq = Schedule::sequential(vec![warm.clone(), decay.clone()], vec![10]).unwrap();
        for step in [0, 5, 9] {
            assert_eq!(seq.lr(step), warm.lr(step));
        }
        for step in [10, 11, 60, 110] {
            assert_eq!(seq.lr(step), decay.lr(step - 10));
        }
    }

    #[test]
    fn bad_parameters_are_typed_errors() {
        assert!(Schedule::step_lr(0.1, 0, 0.1).is_err());
        assert!(Schedule::cosine_annealing_lr(f64::NAN, 10, 0.0).is_err());
        assert!(Schedule::linear_lr(1.0, 0.0, 1.0, 5).is_err());
        assert!(Schedule::constant_lr(1.0, 2.0, 5).is_err());
        assert!(Schedule::warmup_cosine(1e-3, 1e-4, 100, 100).is_err());
        assert!(Schedule::sequential(vec![], vec![]).is_err());
        let c = Schedule::constant(1.0).unwrap();
        assert!(Schedule::sequential(vec![c.clone(), c.clone()], vec![]).is_err());
        assert!(Schedule::sequential(vec![c.clone(), c.clone(), c], vec![5, 5]).is_err());
        let e = Schedule::step_lr(0.1, 0, 0.1).unwrap_err().to_string();
        assert!(e.contains("StepLR") && e.contains("at least 1"), "{e}");
    }
}
