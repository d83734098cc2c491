//! Out-of-range ids and classes are typed errors naming the op, the value and the bound
//! (PyTorch's `IndexError`), never a silent zero row or NaN: at once for ids uploaded from
//! the host, at the next read for ids computed on the GPU. And `Debug` of tang's errors
//! prints their `Display` text, so `?` out of `main` shows the hint.

use tang_nn::models::gpt::{Gpt, GptConfig};
use tang_nn::nn::Embedding;
use tang_nn::nn::functional::cross_entropy;
use tang_nn::rng::SplitMix64;
use tang_nn::tang_runtime;
use tang_nn::{Module, Tensor, autograd};

/// The `IndexOutOfRange` inside `e`, as `(op, value, bound)`.
fn out_of_range(e: &autograd::Error) -> Option<(String, u64, u64)> {
    match e {
        autograd::Error::Runtime(tang_runtime::Error::IndexOutOfRange { op, value, bound }) => {
            Some((op.clone(), *value, *bound))
        }
        _ => None,
    }
}

fn small_gpt(dev: &tang_runtime::Device) -> Gpt {
    let config = GptConfig {
        vocab_size: 11,
        block_size: 8,
        n_layer: 1,
        n_head: 2,
        n_kv_head: 2,
        n_embd: 16,
        dropout: 0.0,
        bias: false,
        ..GptConfig::gpt2()
    };
    Gpt::new(dev, &config, 0).unwrap()
}

#[test]
fn a_token_past_the_vocabulary_is_an_error_in_gpt_forward_and_embedding() {
    let dev = tang_testing::device();
    let gpt = small_gpt(&dev);
    let idx = Tensor::from_u32(&dev, &[1, 2, 11, 3], &[1, 4]).unwrap();
    let e = gpt.forward(&idx).unwrap_err();
    assert_eq!(out_of_range(&e), Some(("embedding".into(), 11, 11)), "{e}");
    assert!(e.to_string().contains("index 11") && e.to_string().contains("below 11"));
    // In range, the same call works.
    let ok = Tensor::from_u32(&dev, &[1, 2, 10, 3], &[1, 4]).unwrap();
    assert_eq!(gpt.forward(&ok).unwrap().shape(), &[1, 4, 11]);

    let emb = Embedding::new(&dev, 5, 3, &mut SplitMix64::new(0)).unwrap();
    let ids = Tensor::from_u32(&dev, &[0, 7, 4], &[3]).unwrap();
    let e = emb.forward(&ids).unwrap_err();
    assert_eq!(out_of_range(&e), Some(("embedding".into(), 7, 5)), "{e}");
}

#[test]
fn a_class_past_the_logits_is_an_error_in_cross_entropy() {
    let dev = tang_testing::device();
    let logits = Tensor::zeros(&dev, &[3, 4]).unwrap().into_parameter();
    let y = Tensor::from_u32(&dev, &[0, 4, 1], &[3]).unwrap();
    let e = cross_entropy(&logits, &y).unwrap_err();
    assert_eq!(
        out_of_range(&e),
        Some(("cross_entropy".into(), 4, 4)),
        "{e}"
    );
}

#[test]
fn an_index_past_the_dimension_is_an_error_in_index_select_and_gather() {
    let dev = tang_testing::device();
    let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let idx = Tensor::from_u32(&dev, &[0, 3], &[2]).unwrap();
    let e = x.index_select(1, &idx).unwrap_err();
    assert_eq!(out_of_range(&e), Some(("index_select".into(), 3, 3)), "{e}");
    let idx = Tensor::from_u32(&dev, &[0, 2], &[2]).unwrap();
    let e = x.index_select(0, &idx).unwrap_err();
    assert_eq!(out_of_range(&e), Some(("index_select".into(), 2, 2)), "{e}");

    let index = Tensor::from_u32(&dev, &[2, 5], &[2, 1]).unwrap();
    let e = x.gather(1, &index).unwrap_err();
    assert_eq!(out_of_range(&e), Some(("gather".into(), 5, 3)), "{e}");
    let index = Tensor::from_u32(&dev, &[2, 0], &[2, 1]).unwrap();
    assert_eq!(x.gather(1, &index).unwrap().to_vec().unwrap(), [3.0, 4.0]);
}

#[test]
fn ids_computed_on_the_gpu_report_at_the_next_read() {
    let dev = tang_testing::device();
    let emb = Embedding::new(&dev, 5, 3, &mut SplitMix64::new(0)).unwrap();
    // `arange` runs on the GPU: the host does not know its largest value.
    let ids = Tensor::arange(&dev, 7).unwrap();
    let rows = emb.forward(&ids).unwrap(); // recorded; checked on the device
    let e = rows.to_vec().unwrap_err();
    assert_eq!(out_of_range(&e), Some(("embedding".into(), 6, 5)), "{e}");
    // Reported once: the next read succeeds.
    assert_eq!(rows.to_vec().unwrap().len(), 7 * 3);
    // In range on the GPU: no error at the read or at a sync.
    let ids = Tensor::arange(&dev, 5).unwrap();
    assert_eq!(emb.forward(&ids).unwrap().to_vec().unwrap().len(), 15);
    let y = Tensor::arange(&dev, 3).unwrap();
    let logits = Tensor::zeros(&dev, &[3, 2]).unwrap();
    let _loss = logits.cross_entropy(&y, None).unwrap();
    let e = dev.sync().unwrap_err();
    assert!(
        matches!(
            e,
            tang_runtime::Error::IndexOutOfRange {
                value: 2,
                bound: 2,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn gathered_token_windows_keep_the_corpus_bound() {
    let dev = tang_testing::device();
    // Every window holds token 9; the host knows the corpus' largest id.
    let batcher = tang_nn::data::DeviceTokenBatcher::new(&dev, &[9; 8], 2, 3, 0).unwrap();
    let (x, _) = batcher.batch(0).unwrap();
    // Proven in range on the host: the embedding launches no check (one launch).
    let wide = Embedding::new(&dev, 10, 2, &mut SplitMix64::new(0)).unwrap();
    let before = dev.stats().launches;
    let rows = wide.forward(&x).unwrap();
    assert_eq!(dev.stats().launches - before, 1);
    rows.to_vec().unwrap();
    // Past a 4-token table: only an upper bound is known, so the GPU checks and the
    // next read reports the 9.
    let narrow = Embedding::new(&dev, 4, 2, &mut SplitMix64::new(0)).unwrap();
    let e = narrow.forward(&x).unwrap().to_vec().unwrap_err();
    assert_eq!(out_of_range(&e), Some(("embedding".into(), 9, 4)), "{e}");
}

#[test]
fn debug_of_an_error_prints_its_display_text() {
    let dev = tang_testing::device();
    let x = Tensor::zeros(&dev, &[2, 3]).unwrap();
    let e = x.reshape(&[4, -1]).unwrap_err();
    let debug = format!("{e:?}");
    assert!(
        debug.contains(&e.to_string()) && debug.contains("reshape"),
        "{debug}"
    );
    let e = tang_runtime::Error::NoAdapter {
        detail: "backends VULKAN".into(),
    };
    assert_eq!(format!("{e:?}"), e.to_string());
    let boxed: Box<dyn std::error::Error> = Box::new(e.clone());
    assert_eq!(format!("{boxed:?}"), e.to_string());
}

#[test]
fn parameters_listed_by_a_module_train_by_backwards_gradients() {
    // The optimizer built from the module steps on what backward() returned.
    let dev = tang_testing::device();
    let fc = tang_nn::nn::Linear::new(&dev, 2, 1, true, &mut SplitMix64::new(0)).unwrap();
    let mut opt = tang_nn::optim::Sgd::new(
        fc.named_parameters(),
        tang_nn::optim::SgdOptions {
            lr: 0.5,
            ..Default::default()
        },
    )
    .unwrap();
    let before = fc.bias.as_ref().unwrap().to_vec().unwrap();
    let grads = fc
        .forward(&Tensor::ones(&dev, &[1, 2]).unwrap())
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    opt.step(&grads).unwrap();
    let after = fc.bias.as_ref().unwrap().to_vec().unwrap();
    assert_eq!(after[0], before[0] - 0.5); // d(sum)/d(bias) = 1
}
