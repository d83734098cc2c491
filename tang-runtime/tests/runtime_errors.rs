//! Every typed error the runtime returns, provoked through the public API.

mod runtime_support;

use runtime_support::{add, axpy, devices, sgd};
use tang_runtime::{AdapterIndex, Binding, DType, Device, DeviceOptions, Error, RawKernel, Tensor};

#[test]
fn no_adapter_names_what_to_install() {
    let opts = DeviceOptions {
        adapter: Some("no adapter is called this".into()),
        ..DeviceOptions::default()
    };
    let err = Device::with_options(opts).unwrap_err();
    assert!(matches!(err, Error::NoAdapter { .. }), "{err:?}");
    assert!(err.to_string().contains("mesa-vulkan-drivers"));
}

#[test]
fn adapter_index_past_the_adapters_is_an_error_and_a_local_rank_wraps() {
    let opts = |index| DeviceOptions {
        adapter_index: Some(index),
        ..DeviceOptions::default()
    };
    let err = Device::with_options(opts(AdapterIndex::Exact(10_000))).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
    assert!(err.to_string().contains("pick an index below"), "{err}");
    // A launcher's local rank past the GPUs shares them: rank 10,000 opens one.
    let first = Device::with_options(opts(AdapterIndex::Exact(0))).unwrap();
    let wrapped = Device::with_options(opts(AdapterIndex::LocalRank(10_000))).unwrap();
    assert_eq!(first.info().backend, wrapped.info().backend);
}

#[test]
fn arity_dtype_and_shape_errors() {
    for dev in devices() {
        let x = Tensor::from_slice(&dev, &[1.0; 6], &[2, 3]).unwrap();
        let e = dev.launch(add(), &[&x], &[], &[]).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Arity {
                    what: "inputs",
                    expected: 2,
                    got: 1,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = dev.launch(axpy(), &[&x, &x], &[], &[]).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Arity {
                    what: "uniforms",
                    expected: 1,
                    got: 0,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = dev.launch(sgd(), &[&x], &[], &[0.1]).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Arity {
                    what: "in-out tensors",
                    ..
                }
            ),
            "{e:?}"
        );

        let ids = Tensor::from_u32(&dev, &[1, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
        let e = dev.launch(add(), &[&x, &ids], &[], &[]).unwrap_err();
        assert!(
            matches!(
                e,
                Error::DType {
                    expected: DType::F32,
                    got: DType::U32,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(matches!(ids.to_vec(), Err(Error::DType { .. })));
        assert!(matches!(x.to_vec_u32(), Err(Error::DType { .. })));

        let col = Tensor::from_slice(&dev, &[1.0, 2.0], &[2]).unwrap();
        let e = dev.launch(add(), &[&x, &col], &[], &[]).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
        assert!(e.to_string().contains("do not broadcast"), "{e}");
        assert!(matches!(
            Tensor::from_slice(&dev, &[1.0; 5], &[2, 3]),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(x.reshape(&[4]), Err(Error::ShapeMismatch { .. })));
        assert!(matches!(x.write(&[1.0]), Err(Error::ShapeMismatch { .. })));
        let p = Tensor::from_slice(&dev, &[1.0; 4], &[4]).unwrap();
        let g = Tensor::from_slice(&dev, &[1.0; 6], &[6]).unwrap();
        // The gradient is longer than the in-out it updates.
        assert!(matches!(
            dev.launch(sgd(), &[&g], &[&p], &[0.1]),
            Err(Error::ShapeMismatch { .. })
        ));
        // The launch still works after the errors.
        assert_eq!(
            dev.launch(add(), &[&x, &x], &[], &[]).unwrap()[0]
                .to_vec()
                .unwrap(),
            vec![2.0; 6]
        );
    }
}

#[test]
fn too_large_and_aliasing() {
    let dev = Device::new().unwrap();
    let max = dev.info().limits.max_buffer_size;
    let e = dev
        .empty(&[(max / 4 + 1) as usize], DType::F32)
        .unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
    let e = dev.empty(&[usize::MAX, 2], DType::F32).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
    let p = Tensor::from_slice(&dev, &[1.0; 4], &[4]).unwrap();
    let e = dev.launch(sgd(), &[&p], &[&p], &[0.1]).unwrap_err();
    assert!(matches!(e, Error::Aliasing { .. }), "{e:?}");
    let k = RawKernel::checked("noop", "@compute @workgroup_size(1) fn main() {}", "main");
    let e = dev
        .dispatch_raw(&k, &[], &[], [u32::MAX, 1, 1])
        .unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
    let many: Vec<Binding<'_>> = (0..=dev.info().limits.max_storage_buffers_per_shader_stage)
        .map(|_| Binding::Read(&p))
        .collect();
    let e = dev.dispatch_raw(&k, &[], &many, [1, 1, 1]).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
}

#[test]
fn wgpu_validation_errors_are_returned_not_panicked() {
    let dev = Device::new().unwrap();
    let k = RawKernel::checked(
        "wants_storage",
        "@group(0) @binding(0) var<storage, read_write> a: array<f32>;\n@compute @workgroup_size(1) fn main() { a[0] = 1.0; }",
        "main",
    );
    // A uniform where the shader declares a storage buffer: the pipeline is invalid.
    let r = dev
        .dispatch_raw(&k, &[], &[Binding::Uniform(&[0u8; 16])], [1, 1, 1])
        .and_then(|()| dev.sync());
    assert!(matches!(r, Err(Error::Wgpu(_))), "{r:?}");
    // The device keeps working.
    let t = Tensor::from_slice(&dev, &[3.0], &[1]).unwrap();
    dev.dispatch_raw(&k, &[], &[Binding::ReadWrite(&t)], [1, 1, 1])
        .unwrap();
    assert_eq!(t.to_vec().unwrap(), vec![1.0]);
}

#[test]
fn shader_error_from_a_misused_trace() {
    let dev = Device::new().unwrap();
    let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2]).unwrap();
    let mut stolen = None;
    dev.map(&[&x], |v| {
        stolen = Some(v[0]);
        v[0]
    })
    .unwrap();
    let other = stolen.unwrap();
    let e = dev.map(&[&x], |v| v[0] + other).unwrap_err();
    assert!(matches!(e, Error::Shader(_)), "{e:?}");
}

#[test]
fn device_lost_after_destroy() {
    let dev = Device::new().unwrap();
    let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2]).unwrap();
    dev.wgpu_device().destroy();
    let _ = dev.sync();
    let e = x.to_vec().unwrap_err();
    assert!(matches!(e, Error::DeviceLost(_)), "{e:?}");
    assert!(matches!(
        dev.launch(add(), &[&x, &x], &[], &[]),
        Err(Error::DeviceLost(_))
    ));
    assert!(e.to_string().contains("create a new Device"));
}
