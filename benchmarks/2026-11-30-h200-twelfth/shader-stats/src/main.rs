//! shader-stats: the Vulkan driver's compile statistics of WGSL compute kernels.
//!
//! wgpu does not expose `VK_KHR_pipeline_executable_properties`, so this program opens its
//! own Vulkan device (with cooperative matrices, f16 and the Vulkan memory model, as wgpu
//! enables them for tang), translates each WGSL file with naga the way wgpu does for a
//! trusted module (no bounds checks, no loop bounding, no division guards; workgroup
//! memory zeroed natively unless `--no-zero`), builds the compute pipeline with
//! statistics capture on and prints every statistic the driver reports (register count,
//! spills, ... under the driver's own names), and with `--ir DIR` writes the driver's
//! internal representations, where it gives any, to DIR. With `--cache DIR` it builds
//! each pipeline through a pipeline cache and writes the cache's data to
//! `DIR/<file stem>.cache`: on NVIDIA's driver that blob holds the compiled machine code,
//! which `sass.py` (beside this folder's `Cargo.toml`) extracts and disassembles.
//!
//! Usage: `shader-stats [--no-zero] [--ir DIR] [--cache DIR] file.wgsl...`

use std::error::Error;
use std::ffi::CStr;

use ash::{khr, vk};

fn main() -> Result<(), Box<dyn Error>> {
    let mut zero = true;
    let mut ir_dir: Option<String> = None;
    let mut cache_dir: Option<String> = None;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--no-zero" => zero = false,
            "--ir" => ir_dir = args.next(),
            "--cache" => cache_dir = args.next(),
            _ => files.push(a),
        }
    }
    let entry = unsafe { ash::Entry::load()? };
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let instance =
        unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None)? };
    let pds = unsafe { instance.enumerate_physical_devices()? };
    let want: [&CStr; 2] = [
        khr::pipeline_executable_properties::NAME,
        khr::cooperative_matrix::NAME,
    ];
    let mut chosen = None;
    for pd in pds {
        let props = unsafe { instance.get_physical_device_properties(pd) };
        let name = props.device_name_as_c_str()?.to_string_lossy().into_owned();
        let exts = unsafe { instance.enumerate_device_extension_properties(pd)? };
        let has = |n: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
        println!(
            "adapter {name}: driver {:#x}, pipeline_executable_properties {}, cooperative_matrix {}",
            props.driver_version,
            has(want[0]),
            has(want[1])
        );
        if chosen.is_none() && has(want[0]) {
            chosen = Some((pd, has(want[1])));
        }
    }
    let (pd, coop) = chosen.ok_or("no adapter reports VK_KHR_pipeline_executable_properties")?;
    let qf = unsafe { instance.get_physical_device_queue_family_properties(pd) }
        .iter()
        .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .ok_or("no compute queue")? as u32;
    let prio = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(qf)
        .queue_priorities(&prio)];
    let mut exts: Vec<*const i8> = vec![want[0].as_ptr()];
    if coop {
        exts.push(want[1].as_ptr());
    }
    let mut pef =
        vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true);
    let mut cmf = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default().cooperative_matrix(coop);
    let mut v11 = vk::PhysicalDeviceVulkan11Features::default()
        .storage_buffer16_bit_access(true)
        .uniform_and_storage_buffer16_bit_access(true);
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default()
        .shader_float16(true)
        .vulkan_memory_model(true)
        .vulkan_memory_model_device_scope(true);
    let mut v13 = vk::PhysicalDeviceVulkan13Features::default().shader_zero_initialize_workgroup_memory(true);
    let base = vk::PhysicalDeviceFeatures::default().shader_int64(true).shader_int16(true);
    let mut info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&exts)
        .enabled_features(&base)
        .push_next(&mut pef)
        .push_next(&mut v11)
        .push_next(&mut v12)
        .push_next(&mut v13);
    if coop {
        info = info.push_next(&mut cmf);
    }
    let device = unsafe { instance.create_device(pd, &info, None)? };
    let pep = khr::pipeline_executable_properties::Device::new(&instance, &device);
    for file in &files {
        match stats(&device, &pep, file, zero, ir_dir.as_deref(), cache_dir.as_deref()) {
            Ok(()) => {}
            Err(e) => println!("== {file}: error: {e}"),
        }
    }
    unsafe {
        device.destroy_device(None);
        instance.destroy_instance(None);
    }
    Ok(())
}

/// SPIR-V for `wgsl` as wgpu writes it for a trusted module.
fn spirv(wgsl: &str, zero: bool) -> Result<(Vec<u32>, String, Vec<vk::DescriptorType>), Box<dyn Error>> {
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| e.emit_to_string(wgsl))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| format!("{e:?}"))?;
    let ep = module
        .entry_points
        .iter()
        .find(|e| e.stage == naga::ShaderStage::Compute)
        .ok_or("no compute entry point")?
        .name
        .clone();
    let constants = naga::back::PipelineConstants::default();
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((naga::ShaderStage::Compute, &ep)),
        &constants,
    )
    .map_err(|e| format!("{e:?}"))?;
    let mut kinds: Vec<(u32, vk::DescriptorType)> = Vec::new();
    for (_, g) in module.global_variables.iter() {
        if let Some(b) = &g.binding {
            let ty = match g.space {
                naga::AddressSpace::Uniform => vk::DescriptorType::UNIFORM_BUFFER_DYNAMIC,
                naga::AddressSpace::Storage { .. } => vk::DescriptorType::STORAGE_BUFFER,
                _ => return Err("a binding that is not a buffer".into()),
            };
            kinds.push((b.binding, ty));
        }
    }
    kinds.sort_by_key(|k| k.0);
    let options = naga::back::spv::Options {
        lang_version: (1, 6),
        flags: naga::back::spv::WriterFlags::empty(),
        fake_missing_bindings: true,
        capabilities: None,
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: naga::proc::BoundsCheckPolicy::Unchecked,
            buffer: naga::proc::BoundsCheckPolicy::Unchecked,
            image_load: naga::proc::BoundsCheckPolicy::Unchecked,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory: if zero {
            naga::back::spv::ZeroInitializeWorkgroupMemoryMode::Native
        } else {
            naga::back::spv::ZeroInitializeWorkgroupMemoryMode::None
        },
        force_loop_bounding: false,
        ray_query_initialization_tracking: false,
        trace_ray_argument_validation: false,
        use_storage_input_output_16: true,
        emit_int_div_checks: false,
        mesh_shader_primitive_indices_clamp: false,
        ..Default::default()
    };
    let po = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: ep.clone(),
    };
    let words = naga::back::spv::write_vec(&module, &info, &options, Some(&po)).map_err(|e| format!("{e:?}"))?;
    Ok((words, ep, kinds.into_iter().map(|k| k.1).collect()))
}

fn stats(
    device: &ash::Device,
    pep: &khr::pipeline_executable_properties::Device,
    file: &str,
    zero: bool,
    ir_dir: Option<&str>,
    cache_dir: Option<&str>,
) -> Result<(), Box<dyn Error>> {
    let wgsl = std::fs::read_to_string(file)?;
    let (words, ep, kinds) = spirv(&wgsl, zero)?;
    let bindings: Vec<vk::DescriptorSetLayoutBinding> = kinds
        .iter()
        .enumerate()
        .map(|(i, t)| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(i as u32)
                .descriptor_type(*t)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    unsafe {
        let dsl = device.create_descriptor_set_layout(
            &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
            None,
        )?;
        let sets = [dsl];
        let pl = device.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sets), None)?;
        let sm = device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)?;
        let name = std::ffi::CString::new(ep)?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(sm)
            .name(&name);
        let ci = [vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(pl)
            .flags(
                vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
                    | vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR,
            )];
        let t0 = std::time::Instant::now();
        let cache = device.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None)?;
        let pipe = device
            .create_compute_pipelines(cache, &ci, None)
            .map_err(|(_, e)| e)?[0];
        if let Some(dir) = cache_dir {
            let data = device.get_pipeline_cache_data(cache)?;
            let stem = std::path::Path::new(file)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            std::fs::create_dir_all(dir)?;
            std::fs::write(format!("{dir}/{stem}.cache"), &data)?;
            println!("  pipeline cache: {} bytes", data.len());
        }
        device.destroy_pipeline_cache(cache, None);
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        let pinfo = vk::PipelineInfoKHR::default().pipeline(pipe);
        let execs = pep.get_pipeline_executable_properties(&pinfo)?;
        println!("== {file} ({} SPIR-V words, compiled in {ms:.0} ms)", words.len());
        for (i, ex) in execs.iter().enumerate() {
            let einfo = vk::PipelineExecutableInfoKHR::default()
                .pipeline(pipe)
                .executable_index(i as u32);
            println!(
                "  executable {i}: {} (subgroup size {})",
                ex.name_as_c_str()?.to_string_lossy(),
                ex.subgroup_size
            );
            for s in pep.get_pipeline_executable_statistics(&einfo)? {
                let v = match s.format {
                    vk::PipelineExecutableStatisticFormatKHR::BOOL32 => format!("{}", s.value.b32),
                    vk::PipelineExecutableStatisticFormatKHR::INT64 => format!("{}", s.value.i64),
                    vk::PipelineExecutableStatisticFormatKHR::UINT64 => format!("{}", s.value.u64),
                    _ => format!("{}", s.value.f64),
                };
                println!(
                    "    {} = {v}   ({})",
                    s.name_as_c_str()?.to_string_lossy(),
                    s.description_as_c_str()?.to_string_lossy()
                );
            }
            if let Some(dir) = ir_dir {
                ir(pep, &einfo, dir, file, i)?;
            }
        }
        device.destroy_pipeline(pipe, None);
        device.destroy_shader_module(sm, None);
        device.destroy_pipeline_layout(pl, None);
        device.destroy_descriptor_set_layout(dsl, None);
    }
    Ok(())
}

/// Writes each internal representation the driver gives for executable `i` of `file`.
unsafe fn ir(
    pep: &khr::pipeline_executable_properties::Device,
    einfo: &vk::PipelineExecutableInfoKHR,
    dir: &str,
    file: &str,
    i: usize,
) -> Result<(), Box<dyn Error>> {
    let fp = pep.fp();
    let mut n = 0u32;
    unsafe {
        (fp.get_pipeline_executable_internal_representations_khr)(pep.device(), einfo, &mut n, std::ptr::null_mut())
            .result()?;
        let mut reps = vec![vk::PipelineExecutableInternalRepresentationKHR::default(); n as usize];
        (fp.get_pipeline_executable_internal_representations_khr)(pep.device(), einfo, &mut n, reps.as_mut_ptr())
            .result()?;
        let mut bufs: Vec<Vec<u8>> = reps.iter().map(|r| vec![0u8; r.data_size]).collect();
        for (r, b) in reps.iter_mut().zip(bufs.iter_mut()) {
            r.p_data = b.as_mut_ptr().cast();
        }
        (fp.get_pipeline_executable_internal_representations_khr)(pep.device(), einfo, &mut n, reps.as_mut_ptr())
            .result()?;
        let stem = std::path::Path::new(file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for (j, (r, b)) in reps.iter().zip(&bufs).enumerate() {
            let rname = r.name_as_c_str()?.to_string_lossy().replace(' ', "_");
            println!(
                "    IR {j}: {} ({} bytes, text {})",
                r.name_as_c_str()?.to_string_lossy(),
                b.len(),
                r.is_text
            );
            std::fs::create_dir_all(dir)?;
            std::fs::write(format!("{dir}/{stem}.{i}.{j}.{rname}"), b)?;
        }
    }
    Ok(())
}
